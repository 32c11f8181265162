// Epilogue fusion: on a CUDA target, a matmul (aten.mm, or an aten.addmm whose bias cuBLASLt
// adds) whose one reader is an activation cuBLASLt's epilogue computes (relu, tanh-GELU) becomes
// one loupe.fused {kind="epilogue"} node, which kernel selection plans as a single cuBLASLt call
// (compiler/codegen/cuda/cuda_library_kernels.h). Left apart, the activation is a kernel of its
// own that reads the product back from memory and writes it again; in the epilogue it is applied
// to the accumulators before the one store, in fp32 before rounding to bf16 or f16.
//
// It runs before pointwise fusion, which would otherwise take the activation into a pointwise
// group: a group the activation leaves still reads the product's (activated) result once, so
// taking it is never worse. A product that is read elsewhere too (a training forward that saves
// it for GELU's backward) stays apart: the epilogue would have to write both values. On the CPU
// the pass does nothing: the generated pointwise kernel after the BLAS product is measured in
// docs/cpu-codegen.md. The decisions name the device.
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "compiler/codegen/cuda/cuda_library_kernels.h"
#include "compiler/pass/fusion_group.h"
#include "compiler/pass/target_device.h"
#include "passes/pipeline.h"

namespace loupe {

namespace {

// The activation that is the product's one reader, when the epilogue can compute it.
Node* epilogueActivation(const Node& product) {
  if (product.op() != "aten.mm" && product.op() != "aten.addmm") return nullptr;
  if (!runsAsCudaLibraryKernel(product, nullptr)) return nullptr;
  const Value* result = product.result();
  if (result->isGraphOutput() || result->users().size() != 1) return nullptr;
  Node* reader = result->users().front();
  if (!isCudaEpilogueActivation(*reader) || reader->operand(0) != result) return nullptr;
  return reader;
}

class EpilogueFusionPass : public TablePass<PassId::EpilogueFusionPass> {
public:
  void run(Graph& graph, PassContext& ctx) override {
    std::optional<Device> device = validTargetDevice(graph, ctx.options().target);
    if (!device || device->isCpu()) return;
    // Found first, fused after: fusing moves the members into the group's body.
    std::vector<std::pair<Node*, Node*>> pairs;
    for (Node* product : graph.nodes())
      if (Node* activation = epilogueActivation(*product)) pairs.emplace_back(product, activation);
    for (auto [product, activation] : pairs) {
      auto describe = [&] {
        return "epilogue-fusion: apply " + activation->describe() + " in the epilogue of " +
               product->describe() + " on " + device->str() +
               " (cuBLASLt activates before its one store: no kernel of its own)";
      };
      if (!ctx.decide("fusion", describe,
                      {activation->result()->name(), product->result()->name()}))
        continue;
      createFusedGroup({product, activation}, "epilogue");
    }
  }
};

} // namespace

std::unique_ptr<Pass> createEpilogueFusionPass() {
  return std::make_unique<EpilogueFusionPass>();
}

} // namespace loupe
