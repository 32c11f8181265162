// decomposition: rewrites composite ops (those whose registry entry has a `decompose` rule,
// e.g. aten.addmm → aten.mm + aten.add.Tensor) into the primitive ops the later passes, the
// fusers and the code generators understand, so each of them handles fewer ops. Replacement
// nodes are built in place, before the node, with its source location, so a user still sees
// their own line on every piece. Pieces that are themselves composite are decomposed in turn:
// the graph is swept until a sweep decomposes nothing.
//
// An op the target device runs as a library kernel stays whole: on the CPU, layer norm's
// backward is one pass of library code, where its pieces (two row means and two column sums)
// took four times as long as generated kernels, and an f32 or f64 aten.addmm is a BLAS product
// accumulated onto its bias (docs/cpu-codegen.md, "Ops kept whole for a library kernel"); on
// CUDA, aten.addmm is one cuBLASLt call with the bias added in its epilogue. A library kernel
// may ask for the decomposition first (CpuLibraryKernel::decompositionFirst): batch norm in
// inference is a scale and shift per channel that fuses with the ReLU after it.
#include <unordered_set>

#include "compiler/codegen/cpu/library_kernels.h"
#include "compiler/codegen/cuda/cuda_library_kernels.h"
#include "compiler/ops/graph_builder.h"
#include "compiler/pass/target_device.h"
#include "passes/pipeline.h"
#include "passes/rewrite_support.h"

namespace loupe {
namespace {

// Nodes a refused or declined decomposition built are the `count` nodes just before `node`;
// removing them (users first) leaves the graph as it was.
void eraseBuiltBefore(Graph& graph, Node* node, size_t count) {
  std::vector<Node*> nodes = graph.nodes();
  size_t end = 0;
  while (nodes[end] != node)
    ++end;
  for (size_t i = end; i > end - count; --i)
    graph.eraseNode(nodes[i - 1]);
}

// Returns whether `node` was replaced.
bool decompose(Graph& graph, Node* node, const OpInfo& info, PassContext& ctx) {
  size_t before = graph.numNodes();
  GraphBuilder builder(graph, node, node->loc());
  std::vector<Value*> replacements = info.decompose(*node, builder);
  size_t built = graph.numNodes() - before;
  bool usable = replacements.size() == node->numResults();
  auto describe = [&] { return describeCall(*node) + " into " + std::to_string(built) + " nodes"; };
  if (usable) usable = ctx.decide("decompose", describe, resultNames(*node));
  if (!usable) {
    eraseBuiltBefore(graph, node, built);
    return false;
  }
  replaceNode(graph, *node, replacements);
  return true;
}

// Whether the device's library kernel runs `node` whole rather than its decomposition (one whose
// pieces fuse with their neighbours goes first: batch norm in inference on the CPU).
bool keptWholeForLibraryKernel(const Node& node, bool onCpu) {
  if (!onCpu) return runsAsCudaLibraryKernel(node, nullptr);
  std::optional<CpuLibraryKernel> kernel = findCpuLibraryKernel(node, nullptr);
  return kernel && !kernel->decompositionFirst;
}

class DecompositionPass : public TablePass<PassId::DecompositionPass> {
public:
  void run(Graph& graph, PassContext& ctx) override {
    std::optional<Device> device = validTargetDevice(graph, ctx.options().target);
    bool onCpu = !device || device->isCpu();
    std::unordered_set<Node*> kept; // refused, declined or a library kernel: never asked again
    for (bool sweepChanged = true; sweepChanged;) {
      sweepChanged = false;
      for (Node* node : graph.nodes()) {
        const OpInfo* info = registeredOp(*node);
        if (!info || !info->decompose || kept.count(node)) continue;
        if (keptWholeForLibraryKernel(*node, onCpu)) {
          kept.insert(node);
          continue;
        }
        if (decompose(graph, node, *info, ctx))
          sweepChanged = true;
        else
          kept.insert(node);
      }
    }
    nameNewValues(graph);
  }
};

} // namespace

std::unique_ptr<Pass> createDecompositionPass() {
  return std::make_unique<DecompositionPass>();
}

} // namespace loupe
