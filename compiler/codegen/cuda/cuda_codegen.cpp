// The entry points of CUDA code generation (cuda_codegen.h): a group is analysed
// (group_analysis.h), laid out (cuda_kernel_layout.h), then emitted (cuda_kernel_emitter.h).
#include "compiler/codegen/cuda/cuda_codegen.h"

#include <algorithm>

#include "compiler/codegen/cuda/cuda_kernel_emitter.h"
#include "compiler/codegen/cuda/cuda_kernel_layout.h"
#include "compiler/codegen/group_analysis.h"
#include "compiler/codegen/sha256.h"
#include "compiler/ir/error.h"

namespace loupe {

namespace {

// The kernel parameter space every CUDA version takes (newer ones take 32 KB on Volta and later).
constexpr size_t kMaxParameterBytes = 4096;

std::string dimList(const std::vector<size_t>& dims) {
  std::string text;
  for (size_t d : dims)
    text += (text.empty() ? "" : ",") + std::to_string(d);
  return "[" + text + "]";
}

std::string strategyOf(const CudaKernelLayout& layout) {
  size_t rank = layout.signature.iterationShape.size();
  bool gathers = std::find(layout.signature.gathered.begin(), layout.signature.gathered.end(),
                           true) != layout.signature.gathered.end();
  if (!layout.reduction && gathers)
    return "pointwise over " + std::to_string(rank) +
           "-d space with gathered inputs: a strided grid-stride loop, one element per thread "
           "(a gather's address needs every loop index)";
  if (!layout.reduction)
    return "pointwise over " + std::to_string(rank) +
           "-d space: " + std::to_string(layout.vectorWidth) +
           " elements per thread with vector accesses when outputs are dense and inputs dense or "
           "row-broadcast and aligned (_vec), else a strided grid-stride loop";
  std::string reduced = "reduction over dims " + dimList(layout.reducedDims) + " of " +
                        std::to_string(rank) + "-d space: ";
  if (layout.passes > 1)
    reduced += std::to_string(layout.reductions) + " reductions in " +
               std::to_string(layout.passes) + " passes over each row; ";
  auto has = [&](CudaEntryRole role) {
    return std::find(layout.entries.begin(), layout.entries.end(), role) != layout.entries.end();
  };
  if (has(CudaEntryRole::ReductionSplit))
    reduced += layout.splitColumns
                   ? "each tile of up to 32 neighbouring outputs on a block of " +
                         std::to_string(kCudaRowBlock) +
                         " threads, split over blocks where the tiles leave the GPU idle, the "
                         "last combining the partials (_split), when the reduced range is at "
                         "least " +
                         std::to_string(kSplitColumnsMinimum) + " long and the tiles at most " +
                         std::to_string(kSplitCounterSlots) + "; otherwise "
                   : "when the rows are too few to fill the GPU and long, each row split over "
                     "blocks whose last combines the partials (_split); otherwise ";
  if (has(CudaEntryRole::ReductionRow))
    return reduced +
           "one warp or block per output when the reduced dims (innermost) are contiguous and "
           "rows at least a warp long (_row; with " +
           std::to_string(layout.vectorWidth) +
           "-element vector accesses where the rows are dense and aligned, _rowvec), else one "
           "thread per output";
  return reduced + "one thread per output (a kept dim is inside the reduced ones)";
}

codegen::GroupAnalysis analyze(const Node& node, const OpRegistry& registry) {
  codegen::GroupAnalysis group = codegen::analyzeGroup(node, registry);
  // Refuses an input of higher rank than its space here rather than when it is launched.
  for (const Value* input : group.inputs)
    codegen::operandDims(group, input);
  size_t bytes = 8 * cuda_codegen::layoutOf(group).argWords();
  if (bytes > kMaxParameterBytes)
    throw codegen::Unsupported{"the kernel's parameter block would take " + std::to_string(bytes) +
                               " bytes, over CUDA's " + std::to_string(kMaxParameterBytes)};
  return group;
}

} // namespace

bool canGenerateCudaKernel(const Node& node, std::string* whyNot, const OpRegistry& registry) {
  try {
    analyze(node, registry);
    return true;
  } catch (const codegen::Unsupported& unsupported) {
    if (whyNot) *whyNot = unsupported.why;
  } catch (const Error& error) {
    if (whyNot) *whyNot = error.message();
  }
  return false;
}

GeneratedCudaKernel generateCudaKernel(const Node& node, const std::string& kernelName,
                                       const OpRegistry& registry) {
  std::string why;
  if (!canGenerateCudaKernel(node, &why, registry))
    throw Error("codegen", "cannot generate a CUDA kernel: " + why,
                ErrorContext{.node = node.describe()});
  codegen::GroupAnalysis group = analyze(node, registry);
  CudaKernelLayout layout = cuda_codegen::layoutOf(group);
  GeneratedCudaKernel kernel;
  kernel.source = cuda_codegen::emitCudaKernelSource(group, layout, registry, kernelName);
  for (CudaEntryRole role : layout.entries)
    kernel.entries.push_back(cuda_codegen::entryName(kernelName, role));
  kernel.strategy = strategyOf(layout);
  return kernel;
}

GeneratedCudaKernel generateCudaKernelNamedByContent(const Node& node, const OpRegistry& registry) {
  // An identifier no generated source holds otherwise.
  static const std::string placeholder = "LOUPE_KERNEL_NAME_PLACEHOLDER";
  GeneratedCudaKernel kernel = generateCudaKernel(node, placeholder, registry);
  std::string digest = sha256Hex(kernel.source).substr(0, 12);
  auto rename = [&](std::string& text) {
    for (size_t at = text.find(placeholder); at != std::string::npos;
         at = text.find(placeholder, at + digest.size()))
      text.replace(at, placeholder.size(), digest);
  };
  rename(kernel.source);
  for (std::string& entry : kernel.entries)
    rename(entry);
  return kernel;
}

bool isCudaCopyOp(const std::string& op) {
  return op == "aten.clone" || op == "aten.lift_fresh_copy";
}

} // namespace loupe
