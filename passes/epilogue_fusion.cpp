// Epilogue fusion: on a CUDA target, a matmul (aten.mm, or an aten.addmm whose bias cuBLASLt
// adds) whose one reader is an activation cuBLASLt's epilogue computes (relu, tanh-GELU) becomes
// one loupe.fused {kind="epilogue"} node, which kernel selection plans as a single cuBLASLt call
// (compiler/codegen/cuda/cuda_library_kernels.h). Left apart, the activation is a kernel of its
// own that reads the product back from memory and writes it again; in the epilogue it is applied
// to the accumulators before the one store, in fp32 before rounding to bf16 or f16.
//
// Training needs the product itself too: a forward saves a GELU's input for GELU's backward (the
// product is a graph output, or read by other nodes). cuBLASLt's GELU_AUX epilogues store that
// input from the epilogue, as an auxiliary matrix beside the activation, so such a product and
// its tanh-GELU still become one group, with two results: the product and the activation. The
// auxiliary matrix's leading dimension (a row of the product) must be a multiple of 8 elements;
// where it is not, the GELU stays a kernel of its own, and kernel selection names the reason
// among that kernel's rejected alternatives. A relu needs none of this: its backward reads its
// output, so a product read elsewhere with a relu stays apart.
//
// The backward mirrors it: an aten.mm whose one reader is a tanh aten.gelu_backward taking the
// product as its gradient is cuBLASLt's DGELU epilogue, which multiplies the product by GELU's
// derivative at the saved pre-activation, read as the auxiliary matrix (the same rule of 8).
//
// It runs before pointwise fusion, which would otherwise take the activation into a pointwise
// group: a group the activation leaves still reads the product's (activated) result once, so
// taking it is never worse. On the CPU the pass does nothing: the generated pointwise kernel
// after the BLAS product is measured in docs/cpu-codegen.md. The decisions name the device.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/codegen/cuda/cuda_library_kernels.h"
#include "compiler/pass/fusion_group.h"
#include "compiler/pass/target_device.h"
#include "passes/pipeline.h"

namespace loupe {

namespace {

enum class Epilogue { Activation, GeluAux, GeluBackward };

struct Candidate {
  Node* product = nullptr;
  Node* reader = nullptr; // the node the epilogue computes
  Epilogue kind = Epilogue::Activation;
};

// The product's reader that cuBLASLt's epilogue can compute, and how.
std::optional<Candidate> epilogueCandidate(Node& product) {
  if (product.op() != "aten.mm" && product.op() != "aten.addmm") return std::nullopt;
  if (!runsAsCudaLibraryKernel(product, nullptr)) return std::nullopt;
  const Value* result = product.result();
  const std::vector<Node*>& users = result->users();
  if (!result->isGraphOutput() && users.size() == 1) {
    Node* reader = users.front();
    if (reader->operand(0) != result) return std::nullopt;
    if (isCudaEpilogueActivation(*reader)) return Candidate{&product, reader};
    if (product.op() == "aten.mm" && isCudaEpilogueGeluBackward(*reader) &&
        reader->operand(1) != result && cudaEpilogueAuxRefusal(result->tensorType()).empty())
      return Candidate{&product, reader, Epilogue::GeluBackward};
    return std::nullopt;
  }
  // Read elsewhere too: only a GELU, whose input the epilogue can store beside it.
  std::vector<Node*> gelus;
  for (Node* user : users) {
    const Value* activated = user->op() == "aten.gelu" ? user->result() : nullptr;
    bool read = activated && (activated->isGraphOutput() || !activated->users().empty());
    if (read && user->operand(0) == result && isCudaEpilogueActivation(*user) &&
        std::find(gelus.begin(), gelus.end(), user) == gelus.end())
      gelus.push_back(user);
  }
  if (gelus.size() != 1 || !cudaEpilogueAuxRefusal(result->tensorType()).empty())
    return std::nullopt;
  return Candidate{&product, gelus.front(), Epilogue::GeluAux};
}

// Who else reads the product, for the decision.
std::string otherReaders(const Candidate& c) {
  const Value* result = c.product->result();
  size_t others = result->users().size() - 1;
  std::string text = result->isGraphOutput()
                         ? "a graph output (what a training forward saves for GELU's backward)"
                         : "";
  if (others != 0)
    text += (text.empty() ? "read by " : " and read by ") + std::to_string(others) + " other node" +
            (others == 1 ? "" : "s");
  return text;
}

class EpilogueFusionPass : public TablePass<PassId::EpilogueFusionPass> {
public:
  void run(Graph& graph, PassContext& ctx) override {
    std::optional<Device> device = validTargetDevice(graph, ctx.options().target);
    if (!device || device->isCpu()) return;
    // Found first, fused after: fusing moves the members into the group's body.
    std::vector<Candidate> candidates;
    for (Node* product : graph.nodes())
      if (std::optional<Candidate> candidate = epilogueCandidate(*product))
        candidates.push_back(*candidate);
    for (const Candidate& c : candidates) {
      auto describe = [&] {
        std::string text = "epilogue-fusion: apply " + c.reader->describe() +
                           " in the epilogue of " + c.product->describe() + " on " + device->str();
        switch (c.kind) {
        case Epilogue::Activation:
          return text + " (cuBLASLt activates before its one store: no kernel of its own)";
        case Epilogue::GeluAux:
          return text + ", which also yields %" + c.product->result()->name() + ": it is " +
                 otherReaders(c) +
                 ", and cuBLASLt writes it from the epilogue as its auxiliary output beside the "
                 "GELU (one call; no kernel of its own reads it back to activate it)";
        case Epilogue::GeluBackward:
          return text +
                 " (cuBLASLt's GELU-gradient epilogue multiplies the product by GELU's "
                 "derivative at %" +
                 c.reader->operand(1)->name() +
                 ", read as its auxiliary input: the gradient is never stored unscaled)";
        }
        return text;
      };
      if (!ctx.decide("fusion", describe,
                      {c.reader->result()->name(), c.product->result()->name()}))
        continue;
      createFusedGroup({c.product, c.reader}, "epilogue");
    }
  }
};

} // namespace

std::unique_ptr<Pass> createEpilogueFusionPass() {
  return std::make_unique<EpilogueFusionPass>();
}

} // namespace loupe
