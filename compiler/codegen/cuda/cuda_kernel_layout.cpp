// A group's CUDA kernel layout (cuda_kernel_layout.h).
#include "compiler/codegen/cuda/cuda_kernel_layout.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <optional>
#include <set>

namespace loupe::cuda_codegen {

using codegen::GroupAnalysis;
using codegen::Space;

namespace {

// Bytes per element in memory: bool is stored as one byte.
size_t storedBytes(DType dtype) {
  return dtype == DType::Bool ? 1 : dtypeSize(dtype);
}

// Whether the reduced dims are the innermost ones, so that one output's inputs are a run of
// consecutive iteration indices: the row entry walks them with its threads.
bool reducedDimsInnermost(const GroupAnalysis& group) {
  size_t rank = group.iterationShape.size();
  const std::vector<size_t>& reduced = group.reducedDims;
  return !reduced.empty() && reduced.back() == rank - 1 && reduced.front() == rank - reduced.size();
}

// Whether the innermost iteration dim is kept: neighbouring threads then read neighbouring
// elements when they take neighbouring outputs (the split entry's tiles).
bool innermostKept(const GroupAnalysis& group) {
  size_t rank = group.iterationShape.size();
  return rank > 0 &&
         !std::binary_search(group.reducedDims.begin(), group.reducedDims.end(), rank - 1);
}

// Whether the split entry may pay: a single-pass group (a multi-pass row group would need every
// pass's results across the splits before the next pass: it keeps the other entries), whose
// reduced extent is symbolic or at least kSplitMinimumRow, kSplitColumnsMinimum where the
// innermost dim is kept (planCudaLaunch never splits shorter ranges: an entry it could not pick
// would only lengthen the build).
bool splitMayPay(const GroupAnalysis& group) {
  if (group.passes != 1) return false;
  int64_t minimum = innermostKept(group) ? kSplitColumnsMinimum : kSplitMinimumRow;
  int64_t extent = 1;
  for (size_t d : group.reducedDims) {
    std::optional<int64_t> size = group.iterationShape[d].constant();
    if (!size) return true;
    extent = std::min(extent * *size, minimum); // no overflow
  }
  return extent >= minimum;
}

// Per input, the passes over the row whose walk reads it (CudaKernelLayout::readInPasses): the
// full-space inputs that the reductions folded in pass k, and in the last pass the full-space
// outputs, are computed from. The walk stops at kept values: they are computed between passes.
std::vector<uint64_t> passesReadingInputs(const GroupAnalysis& group) {
  std::vector<uint64_t> reads(group.inputs.size(), 0);
  if (!group.reduction) return reads;
  auto full = [&](const Value* value) {
    auto found = group.space.find(value);
    return found != group.space.end() && found->second == Space::Full;
  };
  auto mark = [&](const Value* root, int pass) {
    uint64_t bit = passBit(pass);
    std::vector<const Value*> pending{root};
    std::set<const Value*> seen;
    while (!pending.empty()) {
      const Value* value = pending.back();
      pending.pop_back();
      if (!full(value) || !seen.insert(value).second) continue;
      auto input = std::find(group.inputs.begin(), group.inputs.end(), value);
      if (input != group.inputs.end()) {
        reads[static_cast<size_t>(input - group.inputs.begin())] |= bit;
        continue;
      }
      const Node* node = value->definingNode();
      if (!node || group.isReduction(node)) continue;
      for (const Value* operand : node->operands())
        pending.push_back(operand);
    }
  };
  for (const Node* reduction : group.reductions)
    mark(reduction->operand(0), group.passOf(reduction->operand(0)));
  for (const Value* output : group.outputs)
    mark(output, group.passes - 1);
  return reads;
}

// Whether an input's elements differ from row to row: it is indexed by a kept dim of more than
// one element (a symbolic size counts as more).
bool differsByRow(const GroupAnalysis& group, const Value* input) {
  std::vector<size_t> dims = codegen::operandDims(group, input);
  const Shape& shape = input->tensorType().shape;
  for (size_t k = 0; k < dims.size(); ++k) {
    if (dims[k] == kNoIterationDim ||
        std::binary_search(group.reducedDims.begin(), group.reducedDims.end(), dims[k]))
      continue;
    std::optional<int64_t> size = shape[k].constant();
    if (!size || *size != 1) return true;
  }
  return false;
}

} // namespace

CudaKernelLayout layoutOf(const GroupAnalysis& group) {
  CudaKernelLayout layout;
  layout.signature = signatureOf(group);
  layout.numInputs = group.inputs.size();
  std::vector<const Value*> operands(group.inputs.begin(), group.inputs.end());
  operands.insert(operands.end(), group.outputs.begin(), group.outputs.end());
  for (const Value* value : operands) {
    layout.dtypes.push_back(value->tensorType().dtype);
    auto found = group.space.find(value);
    layout.walksReducedDims.push_back(!group.reduction ||
                                      (found != group.space.end() && found->second == Space::Full));
  }
  layout.reduction = group.reduction != nullptr;
  layout.readInPasses = passesReadingInputs(group);
  for (size_t p = 0; p < group.inputs.size(); ++p) {
    layout.differsByRow.push_back(differsByRow(group, group.inputs[p]));
    layout.rowCached.push_back(group.passes > 1 && std::popcount(layout.readInPasses[p]) > 1 &&
                               layout.differsByRow[p]);
  }
  layout.reducedDims = group.reducedDims;
  layout.passes = group.passes;
  layout.reductions = group.reductions.size();
  // 16 bytes of the narrowest operand per vector, at most 8 elements (registers).
  size_t narrowest = 16;
  for (DType dtype : layout.dtypes)
    narrowest = std::min(narrowest, storedBytes(dtype));
  layout.vectorWidth = static_cast<int>(std::min<size_t>(16 / narrowest, 8));
  if (layout.reduction) {
    if (reducedDimsInnermost(group) && group.reducedDims.size() == 1)
      layout.entries.push_back(CudaEntryRole::ReductionRowVectorised);
    if (reducedDimsInnermost(group)) layout.entries.push_back(CudaEntryRole::ReductionRow);
    layout.entries.push_back(CudaEntryRole::ReductionPerOutput);
    if (splitMayPay(group)) layout.entries.push_back(CudaEntryRole::ReductionSplit);
    layout.splitColumns = innermostKept(group);
    return layout;
  }
  // The vectorised entry walks elements by a linear index alone; a gather's address needs the
  // loop indices.
  if (!group.iterationShape.empty() && group.gathers.empty())
    layout.entries.push_back(CudaEntryRole::PointwiseVectorised);
  // The strided entry's divisions and multiplies in 32 bits where the offsets fit (planCudaLaunch
  // decides): docs/cuda-codegen.md has the measurements.
  if (!group.iterationShape.empty()) layout.entries.push_back(CudaEntryRole::PointwiseNarrow);
  layout.entries.push_back(CudaEntryRole::Pointwise);
  return layout;
}

std::string entryName(const std::string& kernelName, CudaEntryRole role) {
  std::string entry = "loupe_" + kernelName;
  std::replace_if(
      entry.begin(), entry.end(), [](char c) { return !std::isalnum(c) && c != '_'; }, '_');
  switch (role) {
  case CudaEntryRole::Pointwise:
  case CudaEntryRole::ReductionPerOutput:
    return entry;
  case CudaEntryRole::PointwiseVectorised:
    return entry + "_vec";
  case CudaEntryRole::PointwiseNarrow:
    return entry + "_narrow";
  case CudaEntryRole::ReductionRow:
    return entry + "_row";
  case CudaEntryRole::ReductionRowVectorised:
    return entry + "_rowvec";
  case CudaEntryRole::ReductionSplit:
    return entry + "_split";
  }
  return entry;
}

} // namespace loupe::cuda_codegen
