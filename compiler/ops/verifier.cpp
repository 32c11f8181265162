#include "compiler/ops/verifier.h"

#include <unordered_set>

#include "compiler/ir/error.h"
#include "compiler/ops/op_registry.h"

namespace loupe {

namespace {

std::string typesStr(const std::vector<Type>& types) {
  std::string s = "(";
  for (size_t i = 0; i < types.size(); ++i)
    s += (i ? ", " : "") + types[i].str();
  return s + ")";
}

class Verifier {
public:
  explicit Verifier(const Graph& root) : rootName_(root.name()) {}

  void verifyGraph(const Graph& graph) {
    std::unordered_set<const Value*> visible;
    std::unordered_set<std::string> names;
    auto declare = [&](const Value* v, const Node* at) {
      visible.insert(v);
      if (!v->name().empty() && !names.insert(v->name()).second)
        fail(at, "value name %" + v->name() + " is defined twice");
    };
    for (const auto& in : graph.inputs()) {
      checkStrides(*in, nullptr);
      declare(in.get(), nullptr);
    }
    for (Node* node : graph.nodes()) {
      for (size_t i = 0; i < node->numOperands(); ++i) {
        const Value* v = node->operand(i);
        if (v && !visible.count(v))
          fail(node, "operand " + std::to_string(i) + " (%" + v->name() +
                         ") is not defined before this node in this graph");
      }
      for (const Value* r : node->results())
        checkStrides(*r, node);
      checkOp(*node);
      if (node->hasBody()) checkBody(*node);
      for (Value* r : node->results())
        declare(r, node);
    }
    for (size_t i = 0; i < graph.outputs().size(); ++i) {
      const Value* v = graph.outputs()[i];
      if (!v || !visible.count(v))
        fail(nullptr,
             "output " + std::to_string(i) + " is not a value defined in graph @" + graph.name());
    }
  }

private:
  [[noreturn]] void fail(const Node* node, const std::string& message) {
    throw Error("verify", message,
                ErrorContext{.graph = rootName_, .node = node ? node->describe() : ""});
  }

  // Everything that walks a layout indexes strides by dimension, so a rank mismatch is
  // rejected here rather than read out of bounds later.
  void checkStrides(const Value& v, const Node* at) {
    if (!v.type().isTensor()) return;
    const TensorType& t = v.type().tensor();
    if (t.strides && t.strides->size() != t.shape.size())
      fail(at, "%" + v.name() + " has " + std::to_string(t.strides->size()) + " strides for " +
                   std::to_string(t.shape.size()) + " dimensions");
  }

  void checkOp(const Node& node) {
    const OpInfo* info = OpRegistry::global().find(node.op());
    if (!info) return; // opaque op: executed by the fallback, nothing to check
    size_t fixed = info->operands.size();
    bool variadic = !info->operands.empty() && info->operands.back().variadic;
    if (variadic ? node.numOperands() < fixed - 1 : node.numOperands() != fixed)
      fail(&node, node.op() + " takes " + std::to_string(variadic ? fixed - 1 : fixed) +
                      (variadic ? " or more" : "") + " operands, found " +
                      std::to_string(node.numOperands()));
    for (size_t i = 0; i < node.numOperands() && i < fixed; ++i)
      if (!node.operand(i) && !info->operands[i].optional && !info->operands[i].variadic)
        fail(&node, "operand '" + info->operands[i].name + "' of " + node.op() + " cannot be none");
    for (const auto& spec : info->attrs)
      if (!spec.defaultValue && !node.attrs().has(spec.name))
        fail(&node, node.op() + " requires attribute '" + spec.name + "'");
    if (!info->infer || node.op() == "loupe.fused") return;
    std::vector<Type> inferred;
    try {
      inferred = inferTypes(*info, node);
    } catch (const Error& e) {
      fail(&node, e.message());
    }
    std::vector<Type> actual;
    for (Value* r : node.results())
      actual.push_back(r->type());
    bool agree = inferred.size() == actual.size();
    for (size_t i = 0; agree && i < actual.size(); ++i)
      agree = equalWhenDivisionsExact(inferred[i], actual[i]);
    if (!agree)
      fail(&node,
           "result types " + typesStr(actual) + " differ from the inferred " + typesStr(inferred));
  }

  void checkBody(const Node& node) {
    const Graph& body = *node.body();
    if (body.numInputs() != node.numOperands())
      fail(&node, "fused body has " + std::to_string(body.numInputs()) + " inputs for " +
                      std::to_string(node.numOperands()) + " operands");
    for (size_t i = 0; i < body.numInputs(); ++i)
      if (node.operand(i) && body.input(i)->type() != node.operand(i)->type())
        fail(&node, "fused body input " + std::to_string(i) + " has type " +
                        body.input(i)->type().str() + " but the operand has " +
                        node.operand(i)->type().str());
    if (body.outputs().size() != node.numResults())
      fail(&node, "fused body yields " + std::to_string(body.outputs().size()) + " values for " +
                      std::to_string(node.numResults()) + " results");
    for (size_t i = 0; i < node.numResults(); ++i)
      if (body.outputs()[i] && body.outputs()[i]->type() != node.result(i)->type())
        fail(&node, "fused body yields " + body.outputs()[i]->type().str() + " for result " +
                        std::to_string(i) + " of type " + node.result(i)->type().str());
    verifyGraph(body);
  }

  std::string rootName_;
};

} // namespace

void verify(const Graph& graph) {
  Verifier(graph).verifyGraph(graph);
}

} // namespace loupe
