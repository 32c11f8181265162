// constant-folding: evaluates, at compile time, every pure registered node whose tensor
// operands are all literal constants or views of them (and factory ops such as aten.full whose
// attributes are all known), with the op's reference implementation, and replaces its results by
// loupe.constant nodes. The result of one fold feeds the next, so chains collapse in one walk.
//
// Limits, and why:
// - A result of more than kMaxFoldedElements elements is left alone: a loupe.constant stores
//   every element in the IR, and a folded 1000x1000 tensor would bloat every snapshot of the
//   trace while saving one kernel launch.
// - Nothing with a symbolic shape or attribute is folded: its size is only known at run time.
// - A result that is not contiguous (a permute of a constant) is left alone: a constant is
//   always contiguous, and changing a value's strides would change its users' inferred types.
//   What reads such a view is folded all the same: its operand is evaluated through the views
//   (knownValue). A model's masks are built this way from aranges, through expand and slice,
//   into cat, cumsum and index; left unfolded they ran every call, each a kernel launch or, on a
//   device, an aten fallback through Python.
#include <algorithm>

#include "passes/pipeline.h"
#include "passes/rewrite_support.h"

namespace loupe {
namespace {

constexpr int64_t kMaxFoldedElements = 1024;
// How many views may stand between a constant and the node folded through them.
constexpr int kMaxViewChain = 16;

bool hasSymbols(const AttrMap& attrs) {
  for (const auto& [name, value] : attrs.values()) {
    if (const auto* dim = std::get_if<SymExpr>(&value); dim && !dim->isConstant()) return true;
    if (const auto* dims = std::get_if<IntList>(&value))
      if (std::any_of(dims->begin(), dims->end(), [](const SymExpr& d) { return !d.isConstant(); }))
        return true;
  }
  return false;
}

// Whether a loupe.constant can stand for this result (see the limits above).
bool isFoldableResult(const Value& result) {
  if (!result.type().isTensor()) return false;
  const TensorType& t = result.tensorType();
  std::optional<int64_t> count = numel(t.shape).constant();
  return count && *count <= kMaxFoldedElements && t.isContiguous();
}

// Whether `value`'s data is known at compile time: a literal constant, or a view of one (views
// with strided results are not folded themselves, but they can be evaluated).
bool knownValue(const Value* value, int depth = 0) {
  if (!value) return false;
  if (constantData(value)) return true;
  const Node* node = value->definingNode();
  if (!node || depth >= kMaxViewChain || !isRewritable(*node)) return false;
  const OpInfo* info = registeredOp(*node);
  if (info->kind != OpKind::View || !info->reference || hasSymbols(node->attrs())) return false;
  auto operands = node->operands();
  return std::all_of(operands.begin(), operands.end(),
                     [&](const Value* v) { return !v || knownValue(v, depth + 1); });
}

bool isFoldable(const Node& node) {
  const OpInfo* info = registeredOp(node);
  if (!isRewritable(node) || !info->reference || node.op() == "loupe.constant") return false;
  if (node.numOperands() == 0 && info->kind != OpKind::Factory) return false;
  if (hasSymbols(node.attrs())) return false;
  auto operands = node.operands();
  auto results = node.results();
  return std::all_of(operands.begin(), operands.end(),
                     [](const Value* v) { return !v || knownValue(v); }) &&
         std::all_of(results.begin(), results.end(),
                     [](const Value* v) { return isFoldableResult(*v); });
}

Tensor materialize(const Value& value);

// The node's results, by its reference implementation on its operands' data (knownValues).
std::vector<Tensor> evaluate(const Node& node) {
  std::vector<Tensor> inputs;
  inputs.reserve(node.numOperands());
  for (const Value* v : node.operands())
    inputs.push_back(v ? materialize(*v) : Tensor());
  std::vector<const Tensor*> inputPtrs;
  for (size_t i = 0; i < inputs.size(); ++i)
    inputPtrs.push_back(node.operand(i) ? &inputs[i] : nullptr);
  std::vector<Type> types;
  for (const Value* r : node.results())
    types.push_back(r->type());
  return runReference(*registeredOp(node), inputPtrs, node.attrs(), types, {});
}

// The data of a knownValue: the constant's, or the views' reference run on it.
Tensor materialize(const Value& value) {
  return evaluate(*value.definingNode()).at(value.index());
}

// One value repeated is stored once: the common case of folded scalars and fills.
FloatList compactData(const Tensor& tensor) {
  FloatList values = tensor.toDoubles();
  bool splat = !values.empty() &&
               std::all_of(values.begin(), values.end(), [&](double v) { return v == values[0]; });
  return splat ? FloatList{values[0]} : values;
}

Value* createConstant(Graph& graph, Node& before, const Tensor& data, const Type& type) {
  AttrMap attrs;
  attrs.set("dtype", type.tensor().dtype);
  attrs.set("shape", IntList(type.tensor().shape));
  attrs.set("data", compactData(data));
  if (!type.tensor().device.isCpu()) attrs.set("device", type.tensor().device.str());
  return graph.createNode("loupe.constant", {}, {type}, std::move(attrs), before.loc(), &before)
      ->result();
}

void fold(Graph& graph, Node& node, PassContext& ctx) {
  auto describe = [&] {
    std::string results;
    for (const Value* r : node.results())
      results += (results.empty() ? "" : ", ") + r->type().str();
    return describeCall(node) + " into constant " + results;
  };
  if (!ctx.decide("fold", describe, resultNames(node))) return;
  std::vector<Tensor> outputs = evaluate(node);
  std::vector<Value*> constants;
  for (size_t i = 0; i < outputs.size(); ++i)
    constants.push_back(createConstant(graph, node, outputs[i], node.result(i)->type()));
  replaceNode(graph, node, constants);
}

class ConstantFoldingPass : public TablePass<PassId::ConstantFoldingPass> {
public:
  void run(Graph& graph, PassContext& ctx) override {
    for (Node* node : graph.nodes())
      if (isFoldable(*node)) fold(graph, *node, ctx);
  }
};

} // namespace

std::unique_ptr<Pass> createConstantFoldingPass() {
  return std::make_unique<ConstantFoldingPass>();
}

} // namespace loupe
