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
// A Linear on a 3-d input multiplies the flattened rows and views the product back before the
// activation (product -> aten.view -> activation). The activation, elementwise, commutes with
// that dense reshape: where moving it before the view lets one of the epilogues above form, it
// moves (a decision of its own), and the view follows it. The backward's gelu_backward behind
// such a view moves the same way, reading the saved pre-activation viewed as rows, so that the
// DGELU epilogue takes it.
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
#include "compiler/ops/graph_builder.h"
#include "compiler/pass/fusion_group.h"
#include "compiler/pass/target_device.h"
#include "passes/pipeline.h"
#include "passes/rewrite_support.h"

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
  if (!isCudaEpilogueProduct(product)) return std::nullopt;
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

// A Linear on a 3-d input ([B, T, C]) multiplies the flattened rows ([B*T, C]) and views the
// product back before its activation: product -> aten.view -> activation. An elementwise
// activation commutes with a reshape of a dense tensor, so it can move before the view (relu of
// the view is the view of relu), where the product and the activation meet as the epilogue
// needs. The view that the product reads through, when moving it lets an epilogue candidate form:
// a relu or GELU that would be the product's one reader, or a GELU whose input is also read
// elsewhere (through the view or not; the auxiliary output then stores it).
struct ViewedActivation {
  Node* view = nullptr;
  Node* activation = nullptr; // or a tanh gelu_backward taking the view as its gradient
};

bool isDenseReshape(const Node& node) {
  if (node.op() != "aten.view" && node.op() != "aten._unsafe_view") return false;
  const Value* input = node.operand(0);
  return input && input->type().isTensor() && input->tensorType().isContiguous() &&
         node.result()->tensorType().isContiguous();
}

std::optional<ViewedActivation> viewedActivation(const Node& product) {
  if (!isCudaEpilogueProduct(product)) return std::nullopt;
  const Value* result = product.result();
  for (Node* view : result->users()) {
    if (!isDenseReshape(*view)) continue;
    const Value* viewed = view->result();
    std::vector<Node*> activations;
    for (Node* user : viewed->users())
      if (user->operand(0) == viewed && isCudaEpilogueActivation(*user) &&
          std::find(activations.begin(), activations.end(), user) == activations.end())
        activations.push_back(user);
    bool alone = !result->isGraphOutput() && result->users().size() == 1 &&
                 !viewed->isGraphOutput() && viewed->users().size() == 1;
    // The backward: a gradient of 3-d rows through GELU, read as 2-d rows by the DGELU epilogue
    // with the saved pre-activation viewed as the product's rows too.
    if (activations.empty() && alone && product.op() == "aten.mm") {
      Node* reader = viewed->users().front();
      const Value* pre = reader->numOperands() == 2 ? reader->operand(1) : nullptr;
      if (isCudaEpilogueGeluBackward(*reader) && reader->operand(0) == viewed && pre != viewed &&
          pre->tensorType().isContiguous() && cudaEpilogueAuxRefusal(result->tensorType()).empty())
        return ViewedActivation{view, reader};
    }
    if (activations.size() != 1) continue;
    Node* activation = activations.front();
    bool auxOk =
        activation->op() == "aten.gelu" && cudaEpilogueAuxRefusal(result->tensorType()).empty();
    if (alone || auxOk) return ViewedActivation{view, activation};
  }
  return std::nullopt;
}

// activation(view(product)) becomes view(activation(product)): the activation's readers read the
// new view, which keeps the activation's name; the old view goes where nothing else reads it.
void moveActivationBeforeView(Graph& graph, Node& product, const ViewedActivation& chain,
                              ValueNames& names) {
  Node* activation = chain.activation;
  GraphBuilder builder(graph, activation, activation->loc());
  std::vector<Value*> operands{product.result()};
  if (activation->numOperands() == 2) { // gelu_backward: its pre-activation as rows too
    AttrMap rowsShape;
    rowsShape.set("size", product.result()->tensorType().shape);
    operands.push_back(builder.op("aten.view", {activation->operand(1)}, rowsShape));
    operands.back()->setName(names.fresh(activation->operand(1)->name() + "_rows"));
  }
  Value* rows = builder.op(activation->op(), operands, activation->attrs());
  Value* viewed = builder.op(chain.view->op(), {rows}, chain.view->attrs());
  std::string name = activation->result()->name();
  rows->setName(names.fresh(name + "_rows"));
  graph.replaceAllUsesWith(activation->result(), viewed);
  graph.eraseNode(activation);
  viewed->setName(name);
  if (!chain.view->result()->isGraphOutput() && chain.view->result()->users().empty())
    graph.eraseNode(chain.view);
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
    // Activations behind a view of the product move before it first, each a decision of its own.
    std::vector<std::pair<Node*, ViewedActivation>> viewed;
    for (Node* product : graph.nodes())
      if (std::optional<ViewedActivation> chain = viewedActivation(*product))
        viewed.emplace_back(product, *chain);
    ValueNames names(graph);
    for (auto& [product, chain] : viewed) {
      auto describe = [&] {
        return "epilogue-fusion: apply " + chain.activation->describe() + " before the view " +
               chain.view->describe() + " of " + product->describe() + " on " + device->str() +
               " (an elementwise op commutes with a dense reshape), so that it can join the "
               "product's epilogue";
      };
      if (ctx.decide("fusion", describe, {chain.activation->result()->name()}))
        moveActivationBeforeView(graph, *product, chain, names);
    }
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
