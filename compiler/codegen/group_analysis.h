// The analysis of a group (a loupe.fused node or a lone op) before its kernel is emitted: the
// values it reads and writes, its iteration space, its reductions and which values walk the
// whole space (the full space) or one element per row (the kept dims), the pass over the rows
// each value is computed in, and its symbolic attribute values. Whatever the emitters cannot
// generate is refused here, with the reason canGenerateCpuKernel / canGenerateCudaKernel report.
//
// A group holds at most one reduction, except a row group (loupe.fused {kind="row"},
// passes/row_fusion.cpp): several reductions over the same rows, with full-space work that reads
// their results (softmax's `exp(x - amax(x))`, layer norm's `x - mean`). Its kernel walks each
// row once per pass: pass k folds the reductions whose inputs need the results of pass k-1, and
// the last pass also writes the full-space outputs.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ops/op_registry.h"

namespace loupe::codegen {

// Why a group is not generated: becomes canGenerateCpuKernel's `whyNot`.
struct Unsupported {
  std::string why;
};

// Values of the reduction's input shape walk the whole space; values of its result shape (and
// the results themselves) are one per row, over the kept dims.
enum class Space { Full, Kept };

// What a group is, as the emitter sees it.
struct GroupAnalysis {
  // The kernel's operands are the inputs, then the outputs: a fused node's body inputs and
  // yielded values, a lone node's operands and results.
  std::vector<const Value*> inputs;
  std::vector<const Node*> nodes; // in order, loupe.constant nodes included
  std::vector<const Value*> outputs;
  const Node* reduction = nullptr;     // the first Reduction node, if any
  std::vector<const Node*> reductions; // every Reduction node, in order
  std::vector<size_t> reducedDims;     // sorted; the same for every reduction
  bool keepdim = false;
  Shape iterationShape;                // the outputs' shape, or the shape of the reduction's input
  std::map<const Value*, Space> space; // inputs and node results; constants have none
  // The pass over the rows a value is available from (reduction groups): 0 for inputs and what
  // they alone compute; a reduction's result is one more than its input's pass. Full values are
  // computed inside the pass loops, kept values between them.
  std::map<const Value*, int> pass;
  int passes = 1;                       // the loops over each row's reduced elements
  int passOf(const Value* value) const; // 0 for a value with no pass (a constant, pointwise)
  bool isReduction(const Node* node) const;
  // More than one pass's worth: several reductions, a full-space value that reads a kept one,
  // or a full-space output.
  bool rowGroup = false;
  // Symbolic attribute values, distinct, in order of first use: run-time scalar arguments (the
  // symbolic sizes of gathered dims too).
  std::vector<SymExpr> scalars;
  // In-place gathers (compiler/ops/in_place_gather.h), pointwise groups only: each reads a group
  // input at addresses its index tensors give. Such an input is read by gathers alone; it has no
  // place in the space and its strides are its own, not the iteration space's.
  std::vector<const Node*> gathers;
  std::vector<bool> gathered; // per input
  bool isGathered(const Value* input) const;
  // Per gather: every index it reads is a constant (a loupe.constant outside the group) within
  // its dim, so the kernel reads it as it is. Otherwise it clamps each index (gather_load.h),
  // which took a bilinear upsampling's kernel from 2.4 to 6.0 ms ([8,32,64,64] to 128x128, 2
  // threads of an AMD EPYC).
  std::vector<bool> gatherIndicesInBounds;
};

// A loupe.constant node (the analysis accepts one-value ones only): the emitter declares it as a
// literal, and it has no place in the space.
bool isConstantNode(const Node* node);

// Throws Unsupported when the node is not generated (see canGenerateCpuKernel).
GroupAnalysis analyzeGroup(const Node& node, const OpRegistry& registry);

// For each dim of `value`, the iteration dim it is indexed by (right-aligned broadcasting), or
// kNoIterationDim (compiler/codegen/kernel_signature.h). Throws Unsupported when the value has a
// higher rank than its space.
std::vector<size_t> operandDims(const GroupAnalysis& group, const Value* value);

} // namespace loupe::codegen
