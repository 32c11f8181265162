// Compute precision and scalar expressions of a group's elementwise ops (scalar_expression.h).
#include "compiler/codegen/scalar_expression.h"

#include <algorithm>

#include "compiler/codegen/group_analysis.h"
#include "compiler/ops/pointwise.h"

namespace loupe::codegen {

namespace {

// Stand-ins for symbolic attributes while an op's scalar expression is generated: integers far
// from any real scalar, exact as doubles, whose literals are then replaced by the run-time
// scalars (`sym<k>`) holding the attributes' values.
constexpr int64_t kStandInBase = 3141592653589;

} // namespace

DType computeDType(DType dtype) {
  if (dtype == DType::F64) return DType::F64;
  if (isFloating(dtype)) return DType::F32;
  if (isIntegral(dtype)) return DType::I64;
  return DType::Bool;
}

DType opComputeDType(const Node& node) {
  auto rank = [](DType d) {
    DType c = computeDType(d);
    return c == DType::Bool ? 0 : c == DType::I64 ? 1 : c == DType::F32 ? 2 : 3;
  };
  DType widest = computeDType(node.result()->tensorType().dtype);
  for (const Value* operand : node.operands())
    if (rank(operand->tensorType().dtype) > rank(widest))
      widest = computeDType(operand->tensorType().dtype);
  return widest;
}

std::string scalarName(size_t index) {
  return "sym" + std::to_string(index);
}

// emitScalar takes attributes, not expressions: each symbolic attribute is passed as its
// stand-in, whose literal in the result is then replaced by the run-time scalar.
std::string scalarExpression(const Node& node, const std::vector<std::string>& args,
                             const std::vector<SymExpr>& scalars, const OpRegistry& registry) {
  AttrMap attrs = node.attrs();
  std::vector<std::pair<std::string, size_t>> standIns; // attribute, scalar index
  for (const auto& [name, value] : node.attrs().values()) {
    const auto* dim = std::get_if<SymExpr>(&value);
    if (!dim || dim->isConstant()) continue;
    size_t index =
        static_cast<size_t>(std::find(scalars.begin(), scalars.end(), *dim) - scalars.begin());
    standIns.emplace_back(name, index);
    attrs.set(name, SymExpr(kStandInBase + static_cast<int64_t>(index)));
  }
  std::string expr = registry.find(node.op())->emitScalar(args, attrs, opComputeDType(node));
  for (const auto& [name, index] : standIns) {
    std::string literal =
        formatFloat(static_cast<double>(kStandInBase + static_cast<int64_t>(index)));
    size_t at = expr.find(literal);
    if (at == std::string::npos)
      throw Unsupported{"op " + node.op() + " cannot take its symbolic attribute " + name +
                        " at run time (its scalar expression does not use the value as is)"};
    for (; at != std::string::npos; at = expr.find(literal, at))
      expr.replace(at, literal.size(), scalarName(index));
  }
  return expr;
}

} // namespace loupe::codegen
