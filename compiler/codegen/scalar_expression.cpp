// Compute precision and scalar expressions of a group's elementwise ops (scalar_expression.h).
#include "compiler/codegen/scalar_expression.h"

#include <algorithm>
#include <cmath>

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

std::string storageType(DType dtype) {
  switch (dtype) {
  case DType::Bool:
    return "uint8_t";
  case DType::U8:
    return "uint8_t";
  case DType::I8:
    return "int8_t";
  case DType::I16:
    return "int16_t";
  case DType::I32:
    return "int32_t";
  case DType::I64:
    return "int64_t";
  case DType::F16:
    return "uint16_t";
  case DType::BF16:
    return "uint16_t";
  case DType::F32:
    return "float";
  case DType::F64:
    return "double";
  }
  return "?";
}

std::string computeType(DType dtype) {
  switch (computeDType(dtype)) {
  case DType::F64:
    return "double";
  case DType::F32:
    return "float";
  case DType::I64:
    return "int64_t";
  default:
    return "bool";
  }
}

std::string loadExpr(DType dtype, const std::string& element) {
  if (dtype == DType::F16) return "loupe_h2f(" + element + ")";
  if (dtype == DType::BF16) return "loupe_bf2f(" + element + ")";
  if (dtype == DType::Bool) return "(" + element + " != 0)";
  return element;
}

std::string storeExpr(DType dtype, const std::string& value) {
  if (dtype == DType::F16) return "loupe_f2h(static_cast<float>(" + value + "))";
  if (dtype == DType::BF16) return "loupe_f2bf(static_cast<float>(" + value + "))";
  if (dtype == DType::Bool) return "static_cast<uint8_t>(" + value + " != 0)";
  return "static_cast<" + storageType(dtype) + ">(" + value + ")";
}

std::string constantLiteral(double value, DType dtype) {
  DType compute = computeDType(dtype);
  if (compute == DType::I64 && std::isfinite(value))
    return "static_cast<int64_t>(" + std::to_string(static_cast<int64_t>(value)) + "LL)";
  return scalarLiteral(value, compute);
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
