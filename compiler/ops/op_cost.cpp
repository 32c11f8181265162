// The bytes and FLOPs model of op_cost.h.
#include "compiler/ops/op_cost.h"

#include <optional>
#include <variant>

namespace loupe {

namespace {

int64_t numel(const TensorType& type, const SymbolBindings& bindings) {
  int64_t count = 1;
  for (const SymExpr& extent : type.shape)
    count *= extent.evaluate(bindings);
  return count;
}

int64_t tensorBytes(const Value* value, const SymbolBindings& bindings) {
  if (!value || !value->type().isTensor()) return 0;
  const TensorType& type = value->tensorType();
  return numel(type, bindings) * static_cast<int64_t>(dtypeSize(type.dtype));
}

int64_t operandNumel(const Node& node, size_t i, const SymbolBindings& bindings) {
  const Value* operand = node.operand(i);
  return operand && operand->type().isTensor() ? numel(operand->tensorType(), bindings) : 0;
}

int64_t resultNumel(const Node& node, size_t i, const SymbolBindings& bindings) {
  return numel(node.result(i)->tensorType(), bindings);
}

// Per output element of a matrix product, K multiply-adds: K is the first factor's last dim
// (operand 0 of mm, bmm and dot; operand 1 of addmm and baddbmm, whose operand 0 is the bias).
double matmulFlops(const Node& node, const SymbolBindings& bindings) {
  size_t factor = node.numOperands() == 3 ? 1 : 0;
  const TensorType& first = node.operand(factor)->tensorType();
  double k = double(first.shape.back().evaluate(bindings));
  return 2.0 * double(resultNumel(node, 0, bindings)) * k;
}

// Per element of the convolution's output (grad_output for the backward), one multiply-add per
// weight element feeding it: Cin/groups * kh * kw = numel(weight) / Cout.
double convolutionFlops(const Node& node, const SymbolBindings& bindings) {
  bool backward = node.op() == "aten.convolution_backward";
  const Value* weight = node.operand(backward ? 2 : 1);
  int64_t outChannels = weight->tensorType().shape.front().evaluate(bindings);
  double perOutput =
      outChannels ? double(numel(weight->tensorType(), bindings)) / double(outChannels) : 0;
  int64_t outputs = backward ? operandNumel(node, 0, bindings) : resultNumel(node, 0, bindings);
  double pass = 2.0 * double(outputs) * perOutput;
  if (!backward) return pass;
  std::vector<bool> mask = node.attrs().getBools("output_mask");
  return (mask.at(0) ? pass : 0) + (mask.at(1) ? pass : 0) + (mask.at(2) ? double(outputs) : 0);
}

constexpr double kNormalizationFlopsPerElement = 5;

// Fused attention: torch's scaled-dot-product kernels, Loupe's CPU one or cuDNN, flash or
// memory-efficient attention run as aten fallbacks on CUDA, known by name (the fallbacks are
// not in the registry). Per (query, key) pair QK^T over the head dim D and PV over the value
// dim Dv: 2*B*H*Lq*Lk*(D + Dv), half the pairs when causal. The backward recomputes QK^T and
// computes dP, dV, dQ and dK: five products where the forward has two. The softmax is not
// counted. Operands: q, k, v first; a backward's grad_out before them.
std::optional<double> attentionFlops(const Node& node, const SymbolBindings& bindings) {
  const std::string& op = node.op();
  if (!op.starts_with("aten._scaled_dot_product_")) return std::nullopt;
  bool backward = op.ends_with("_backward");
  size_t first = backward ? 1 : 0;
  if (node.numOperands() < first + 3) return std::nullopt;
  for (size_t i = first; i < first + 3; ++i)
    if (!node.operand(i) || !node.operand(i)->type().isTensor() ||
        node.operand(i)->tensorType().rank() < 2)
      return std::nullopt;
  const TensorType& q = node.operand(first)->tensorType();
  const TensorType& k = node.operand(first + 1)->tensorType();
  const TensorType& v = node.operand(first + 2)->tensorType();
  double headDim = double(q.shape.back().evaluate(bindings));
  double valueDim = double(v.shape.back().evaluate(bindings));
  double keys = double(k.shape[k.rank() - 2].evaluate(bindings));
  double queries = headDim > 0 ? double(numel(q, bindings)) / headDim : 0;
  double flops = 2.0 * queries * keys * (headDim + valueDim);
  const Attribute* causal = node.attrs().find("is_causal");
  if (causal && std::holds_alternative<bool>(*causal) && std::get<bool>(*causal)) flops /= 2;
  return backward ? 2.5 * flops : flops;
}

double nodeFlops(const Node& node, const SymbolBindings& bindings, const OpRegistry& registry) {
  if (node.hasBody()) {
    double flops = 0;
    for (const Node* inner : node.body()->nodes())
      flops += nodeFlops(*inner, bindings, registry);
    return flops;
  }
  if (std::optional<double> attention = attentionFlops(node, bindings)) return *attention;
  const OpInfo* info = registry.find(node.op());
  if (!info) return 0;
  switch (info->kind) {
  case OpKind::Elementwise:
    return double(resultNumel(node, 0, bindings));
  case OpKind::Reduction:
  case OpKind::Pooling:
    return double(operandNumel(node, 0, bindings));
  case OpKind::Normalization:
    return kNormalizationFlopsPerElement * double(operandNumel(node, 0, bindings));
  case OpKind::Matmul:
    return matmulFlops(node, bindings);
  case OpKind::Convolution:
    return convolutionFlops(node, bindings);
  case OpKind::View:
  case OpKind::DataMovement:
  case OpKind::Factory:
  case OpKind::Other:
    return 0;
  }
  return 0;
}

} // namespace

OpCost opCost(const Node& node, const SymbolBindings& bindings, const OpRegistry& registry) {
  const OpInfo* info = registry.find(node.op());
  if (info && info->kind == OpKind::View) return {};
  OpCost cost;
  for (const Value* operand : node.operands())
    cost.bytes += tensorBytes(operand, bindings);
  for (const Value* result : node.results())
    cost.bytes += tensorBytes(result, bindings);
  cost.flops = nodeFlops(node, bindings, registry);
  return cost;
}

} // namespace loupe
