// Pointwise aten ops: arithmetic and comparisons (tensor and Python-scalar overloads), unary
// math, the pointwise backward ops aot_autograd emits, dropout, and dtype conversions.
//
// Every op is a formula written twice, side by side: a scalar expression template for
// generated kernels (see expandScalarTemplate) and a double-precision function for the
// reference. Keeping the two on one line of a table is what keeps them the same formula.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "compiler/ir/error.h"
#include "compiler/ops/dropout_mask.h"
#include "compiler/ops/graph_builder.h"
#include "compiler/ops/op_registry.h"
#include "compiler/ops/pointwise.h"
#include "compiler/ops/type_promotion.h"

namespace loupe {

namespace {

using Operands = std::vector<const TensorType*>;

// The template a node's attributes and compute type select ("$0 + @alpha * $1").
using TemplateFn = std::function<std::string(const AttrMap& attrs, DType compute)>;

TemplateFn fixed(std::string pattern) {
  return [pattern = std::move(pattern)](const AttrMap&, DType) { return pattern; };
}

// Integer kernels need their own spelling where C++ differs from the floating formula.
TemplateFn byComputeKind(std::string floating, std::string integral) {
  return [floating = std::move(floating), integral = std::move(integral)](
             const AttrMap&, DType compute) { return isFloating(compute) ? floating : integral; };
}

struct PointwiseOp {
  std::string name;
  std::vector<OperandSpec> operands;
  std::vector<AttrSpec> attrs;
  std::string summary;
  DTypeRule dtype;
  TemplateFn scalarTemplate;
  PointwiseFn reference;
  DecomposeFn decompose = nullptr;
  InferFn infer = nullptr; // default: pointwiseInfer with `dtype`
};

void addPointwise(OpRegistry& registry, PointwiseOp op) {
  OpInfo info;
  info.name = op.name;
  info.kind = OpKind::Elementwise;
  info.operands = op.operands;
  info.attrs = op.attrs;
  info.summary = op.summary;
  info.infer = op.infer ? op.infer : pointwiseInfer(op.name, op.dtype);
  info.reference = [specs = op.attrs, loop = pointwiseReference(op.reference)](
                       const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
                       std::vector<Tensor>& outputs) {
    loop(inputs, withDefaults(attrs, specs), outputs);
  };
  info.emitScalar = [specs = op.attrs, scalarTemplate = op.scalarTemplate](
                        const std::vector<std::string>& args, const AttrMap& attrs, DType compute) {
    AttrMap full = withDefaults(attrs, specs);
    return expandScalarTemplate(scalarTemplate(full, compute), args, compute, full);
  };
  info.decompose = op.decompose;
  registry.add(std::move(info));
}

// ---- dtype rules

DType promoted(const Operands& operands, const AttrMap&) {
  return resultType(operands);
}
DType promotedToFloating(const Operands& operands, const AttrMap&) {
  return toFloatingResult(resultType(operands));
}
DType boolean(const Operands&, const AttrMap&) {
  return DType::Bool;
}

// Promotion with the Python scalars held in `scalarAttrs` (absent or none ones skipped).
DTypeRule promotedWithScalars(std::vector<std::string> scalarAttrs, bool floating = false) {
  return [scalarAttrs = std::move(scalarAttrs), floating](const Operands& operands,
                                                          const AttrMap& attrs) {
    std::vector<DType> scalars;
    for (const auto& name : scalarAttrs)
      if (!attrs.isNone(name)) scalars.push_back(scalarDType(*attrs.find(name)));
    DType result = resultType(operands, scalars);
    return floating ? toFloatingResult(result) : result;
  };
}

// ---- binary ops: one formula, registered with a tensor `other` and with a scalar attribute

// Bitwise: promoted like Promoted, but torch rejects floating operands.
enum class BinaryResult { Promoted, Floating, Bool, Bitwise };

using BinaryFn = double (*)(double a, double b, const AttrMap& attrs);

struct BinaryOp {
  std::string tensorName; // "aten.add.Tensor"
  std::string scalarName; // "aten.add.Scalar", or empty when torch has no scalar overload
  std::string scalarAttr; // the scalar overload's attribute standing for operand 1
  std::vector<AttrSpec> extraAttrs;
  BinaryResult result;
  std::string floating; // template over $0, $1
  std::string integral; // template for integer compute, when it differs
  BinaryFn fn;
  std::string summary;
};

double pythonFloorDiv(double a, double b) {
  return std::floor(a / b);
}
double pythonMod(double a, double b) {
  return a - std::floor(a / b) * b;
}
int64_t bits(double x) {
  return static_cast<int64_t>(x);
}
double nanPropagatingMax(double a, double b) {
  return std::isnan(a) || a > b ? a : b;
}
double nanPropagatingMin(double a, double b) {
  return std::isnan(a) || a < b ? a : b;
}

// C++ integer division truncates; Python's (and torch's floor modes) round towards -inf.
constexpr const char* kIntFloorDiv =
    "(($0 / $1) - ((($0 % $1) != 0) && ((($0 % $1) < 0) != ($1 < 0))))";

std::vector<BinaryOp> binaryOps() {
  const std::vector<AttrSpec> alpha = {{"alpha", SymExpr(1)}};
  auto cmp = [](std::string op, std::string symbol, BinaryFn fn) {
    return BinaryOp{"aten." + op + ".Tensor",
                    "aten." + op + ".Scalar",
                    "other",
                    {},
                    BinaryResult::Bool,
                    "($0 " + symbol + " $1)",
                    "",
                    fn,
                    "elementwise self " + symbol + " other, as bool"};
  };
  auto bitwise = [](std::string op, std::string symbol, BinaryFn fn) {
    return BinaryOp{"aten.bitwise_" + op + ".Tensor",
                    "aten.bitwise_" + op + ".Scalar",
                    "other",
                    {},
                    BinaryResult::Bitwise,
                    "($0 " + symbol + " $1)",
                    "",
                    fn,
                    "elementwise self " + symbol + " other on integers and bool"};
  };
  auto logical = [](std::string op, std::string formula, BinaryFn fn) {
    return BinaryOp{"aten.logical_" + op,
                    "",
                    "",
                    {},
                    BinaryResult::Bool,
                    formula,
                    "",
                    fn,
                    "elementwise logical " + op + " (nonzero is true), as bool"};
  };
  return {
      {"aten.add.Tensor", "aten.add.Scalar", "other", alpha, BinaryResult::Promoted,
       "($0 + @alpha * $1)", "",
       [](double a, double b, const AttrMap& at) { return a + at.getFloat("alpha") * b; },
       "self + alpha * other"},
      {"aten.sub.Tensor", "aten.sub.Scalar", "other", alpha, BinaryResult::Promoted,
       "($0 - @alpha * $1)", "",
       [](double a, double b, const AttrMap& at) { return a - at.getFloat("alpha") * b; },
       "self - alpha * other"},
      {"aten.mul.Tensor",
       "aten.mul.Scalar",
       "other",
       {},
       BinaryResult::Promoted,
       "($0 * $1)",
       "",
       [](double a, double b, const AttrMap&) { return a * b; },
       "self * other"},
      {"aten.div.Tensor",
       "aten.div.Scalar",
       "other",
       {},
       BinaryResult::Floating,
       "($0 / $1)",
       "",
       [](double a, double b, const AttrMap&) { return a / b; },
       "true division (integers give the default float dtype)"},
      {"aten.pow.Tensor_Tensor",
       "aten.pow.Tensor_Scalar",
       "exponent",
       {},
       BinaryResult::Promoted,
       "$T(loupe_pow($0, $1))",
       "",
       [](double a, double b, const AttrMap&) { return std::pow(a, b); },
       "self raised to the power exponent"},
      {"aten.maximum",
       "",
       "",
       {},
       BinaryResult::Promoted,
       "(($0 != $0 || $0 > $1) ? $0 : $1)",
       "",
       [](double a, double b, const AttrMap&) { return nanPropagatingMax(a, b); },
       "elementwise maximum, NaN propagating"},
      {"aten.minimum",
       "",
       "",
       {},
       BinaryResult::Promoted,
       "(($0 != $0 || $0 < $1) ? $0 : $1)",
       "",
       [](double a, double b, const AttrMap&) { return nanPropagatingMin(a, b); },
       "elementwise minimum, NaN propagating"},
      {"aten.fmod.Tensor",
       "aten.fmod.Scalar",
       "other",
       {},
       BinaryResult::Promoted,
       "loupe_fmod($0, $1)",
       "($0 % $1)",
       [](double a, double b, const AttrMap&) { return std::fmod(a, b); },
       "C-style remainder (sign of self)"},
      {"aten.remainder.Tensor",
       "aten.remainder.Scalar",
       "other",
       {},
       BinaryResult::Promoted,
       "($0 - loupe_floor($0 / $1) * $1)",
       "(((($0 % $1) + $1) % $1))",
       [](double a, double b, const AttrMap&) { return pythonMod(a, b); },
       "Python-style remainder (sign of other)"},
      cmp("eq", "==", [](double a, double b, const AttrMap&) { return double(a == b); }),
      cmp("ne", "!=", [](double a, double b, const AttrMap&) { return double(a != b); }),
      cmp("lt", "<", [](double a, double b, const AttrMap&) { return double(a < b); }),
      cmp("le", "<=", [](double a, double b, const AttrMap&) { return double(a <= b); }),
      cmp("gt", ">", [](double a, double b, const AttrMap&) { return double(a > b); }),
      cmp("ge", ">=", [](double a, double b, const AttrMap&) { return double(a >= b); }),
      bitwise("and", "&",
              [](double a, double b, const AttrMap&) -> double { return bits(a) & bits(b); }),
      bitwise("or", "|",
              [](double a, double b, const AttrMap&) -> double { return bits(a) | bits(b); }),
      bitwise("xor", "^",
              [](double a, double b, const AttrMap&) -> double { return bits(a) ^ bits(b); }),
      logical("and", "(($0 != 0) && ($1 != 0))",
              [](double a, double b, const AttrMap&) { return double(a != 0 && b != 0); }),
      logical("or", "(($0 != 0) || ($1 != 0))",
              [](double a, double b, const AttrMap&) { return double(a != 0 || b != 0); }),
      logical("xor", "(($0 != 0) != ($1 != 0))",
              [](double a, double b, const AttrMap&) { return double((a != 0) != (b != 0)); }),
  };
}

// Replaces operand 1 of a binary template by the scalar attribute: "$1" → "@other".
std::string withScalarOperand(std::string pattern, const std::string& attr) {
  for (size_t at = pattern.find("$1"); at != std::string::npos; at = pattern.find("$1", at))
    pattern.replace(at, 2, "@" + attr);
  return pattern;
}

void addBinary(OpRegistry& registry, const BinaryOp& op) {
  auto dtypeFor = [&](std::vector<std::string> scalarAttrs) -> DTypeRule {
    switch (op.result) {
    case BinaryResult::Bool:
      return boolean;
    case BinaryResult::Floating:
      return promotedWithScalars(std::move(scalarAttrs), true);
    case BinaryResult::Promoted:
      return promotedWithScalars(std::move(scalarAttrs));
    case BinaryResult::Bitwise:
      return [name = scalarAttrs.empty() ? op.tensorName : op.scalarName,
              rule = promotedWithScalars(scalarAttrs)](const Operands& operands,
                                                       const AttrMap& attrs) {
        DType result = rule(operands, attrs);
        if (isFloating(result))
          throw Error("dtype", name + ": needs integer or bool operands, got " +
                                   std::string(dtypeName(result)));
        return result;
      };
    }
    return promoted;
  };
  auto templateFor = [&](auto rewrite) {
    return op.integral.empty() ? fixed(rewrite(op.floating))
                               : byComputeKind(rewrite(op.floating), rewrite(op.integral));
  };
  addPointwise(registry, {op.tensorName,
                          {{"self"}, {"other"}},
                          op.extraAttrs,
                          op.summary,
                          dtypeFor({}),
                          templateFor([](std::string p) { return p; }),
                          [fn = op.fn](const double* x, const AttrMap& attrs) {
                            return fn(x[0], x[1], attrs);
                          }});
  if (op.scalarName.empty()) return;
  std::vector<AttrSpec> attrs = {{op.scalarAttr, std::nullopt}};
  attrs.insert(attrs.end(), op.extraAttrs.begin(), op.extraAttrs.end());
  addPointwise(registry,
               {op.scalarName,
                {{"self"}},
                attrs,
                op.summary + " (" + op.scalarAttr + " a scalar)",
                dtypeFor({op.scalarAttr}),
                templateFor([&](std::string p) { return withScalarOperand(p, op.scalarAttr); }),
                [fn = op.fn, name = op.scalarAttr](const double* x, const AttrMap& attrs) {
                  return fn(x[0], attrs.getFloat(name), attrs);
                }});
}

// div with rounding_mode: none is true division; "trunc" and "floor" keep integer dtypes.
void addDivWithRoundingMode(OpRegistry& registry) {
  auto mode = [](const AttrMap& attrs) {
    if (attrs.isNone("rounding_mode")) return std::string("none");
    const std::string& m = attrs.getString("rounding_mode");
    if (m != "trunc" && m != "floor")
      throw Error("attribute",
                  "div: rounding_mode must be none, \"trunc\" or \"floor\", not \"" + m + "\"");
    return m;
  };
  // `scalarAttr` empty: operand 1 is a tensor.
  auto templateFn = [mode](std::string scalarAttr) -> TemplateFn {
    return [mode, scalarAttr](const AttrMap& attrs, DType compute) {
      std::string m = mode(attrs);
      std::string p = m == "none"            ? "($0 / $1)"
                      : !isFloating(compute) ? (m == "trunc" ? "($0 / $1)" : kIntFloorDiv)
                                             : "loupe_" + m + "($0 / $1)";
      return scalarAttr.empty() ? p : withScalarOperand(p, scalarAttr);
    };
  };
  auto reference = [mode](double a, double b, const AttrMap& attrs) {
    std::string m = mode(attrs);
    return m == "none" ? a / b : m == "trunc" ? std::trunc(a / b) : pythonFloorDiv(a, b);
  };
  auto dtype = [mode](std::vector<std::string> scalars) -> DTypeRule {
    return [mode, scalars](const Operands& operands, const AttrMap& attrs) {
      return promotedWithScalars(scalars, mode(attrs) == "none")(operands, attrs);
    };
  };
  const AttrSpec roundingMode{"rounding_mode", NoneAttr{}};
  addPointwise(registry, {"aten.div.Tensor_mode",
                          {{"self"}, {"other"}},
                          {roundingMode},
                          "division rounded as rounding_mode says (none, trunc, floor)",
                          dtype({}),
                          templateFn(""),
                          [reference](const double* x, const AttrMap& attrs) {
                            return reference(x[0], x[1], attrs);
                          }});
  addPointwise(registry, {"aten.div.Scalar_mode",
                          {{"self"}},
                          {{"other", std::nullopt}, roundingMode},
                          "division by a scalar rounded as rounding_mode says",
                          dtype({"other"}),
                          templateFn("other"),
                          [reference](const double* x, const AttrMap& attrs) {
                            return reference(x[0], attrs.getFloat("other"), attrs);
                          }});
}

// ---- unary ops

enum class UnaryResult { Same, Floating, Bool };

struct UnaryOp {
  std::string name;
  UnaryResult result;
  std::string pattern; // over $0
  double (*fn)(double);
  std::string summary;
};

double sigmoid(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}

std::vector<UnaryOp> unaryOps() {
  using R = UnaryResult;
  auto math = [](std::string name, double (*fn)(double)) {
    return UnaryOp{"aten." + name, R::Floating, "loupe_" + name + "($0)", fn,
                   name + " (integers give the default float dtype)"};
  };
  return {
      {"aten.neg", R::Same, "(-$0)", [](double x) { return -x; }, "-self"},
      {"aten.abs", R::Same, "loupe_abs($0)", [](double x) { return std::fabs(x); }, "|self|"},
      math("exp", [](double x) { return std::exp(x); }),
      math("log", [](double x) { return std::log(x); }),
      math("log1p", [](double x) { return std::log1p(x); }),
      math("expm1", [](double x) { return std::expm1(x); }),
      math("sqrt", [](double x) { return std::sqrt(x); }),
      math("sin", [](double x) { return std::sin(x); }),
      math("cos", [](double x) { return std::cos(x); }),
      math("tanh", [](double x) { return std::tanh(x); }),
      math("erf", [](double x) { return std::erf(x); }),
      math("tan", [](double x) { return std::tan(x); }),
      math("asin", [](double x) { return std::asin(x); }),
      math("acos", [](double x) { return std::acos(x); }),
      math("atan", [](double x) { return std::atan(x); }),
      math("sinh", [](double x) { return std::sinh(x); }),
      math("cosh", [](double x) { return std::cosh(x); }),
      math("asinh", [](double x) { return std::asinh(x); }),
      math("acosh", [](double x) { return std::acosh(x); }),
      math("atanh", [](double x) { return std::atanh(x); }),
      math("log2", [](double x) { return std::log2(x); }),
      math("log10", [](double x) { return std::log10(x); }),
      math("exp2", [](double x) { return std::exp2(x); }),
      math("erfc", [](double x) { return std::erfc(x); }),
      {"aten.rsqrt", R::Floating, "($T(1) / loupe_sqrt($0))",
       [](double x) { return 1.0 / std::sqrt(x); }, "1 / sqrt(self)"},
      {"aten.reciprocal", R::Floating, "($T(1) / $0)", [](double x) { return 1.0 / x; },
       "1 / self"},
      {"aten.sigmoid", R::Floating, "($T(1) / ($T(1) + loupe_exp(-$0)))", sigmoid,
       "1 / (1 + exp(-self))"},
      {"aten.silu", R::Floating, "($0 / ($T(1) + loupe_exp(-$0)))",
       [](double x) { return x * sigmoid(x); }, "self * sigmoid(self)"},
      {"aten.relu", R::Same, "($0 <= $T(0) ? $T(0) : $0)", [](double x) { return x <= 0 ? 0 : x; },
       "max(self, 0), NaN propagating"},
      {"aten.sign", R::Same, "$T(($T(0) < $0) - ($0 < $T(0)))",
       [](double x) { return double((0 < x) - (x < 0)); }, "-1, 0 or 1"},
      {"aten.floor", R::Same, "loupe_floor($0)", [](double x) { return std::floor(x); },
       "round towards -inf"},
      {"aten.ceil", R::Same, "loupe_ceil($0)", [](double x) { return std::ceil(x); },
       "round towards +inf"},
      {"aten.round", R::Same, "loupe_nearbyint($0)", [](double x) { return std::nearbyint(x); },
       "round half to even"},
      {"aten.logical_not", R::Bool, "($0 == 0)", [](double x) { return double(x == 0); },
       "self == 0, as bool"},
  };
}

void addUnary(OpRegistry& registry, const UnaryOp& op) {
  DTypeRule dtype = op.result == UnaryResult::Same       ? DTypeRule(promoted)
                    : op.result == UnaryResult::Floating ? DTypeRule(promotedToFloating)
                                                         : DTypeRule(boolean);
  addPointwise(registry, {op.name,
                          {{"self"}},
                          {},
                          op.summary,
                          dtype,
                          fixed(op.pattern),
                          [fn = op.fn](const double* x, const AttrMap&) { return fn(x[0]); }});
}

// bitwise_not: ~ on integers, ! on bool; torch rejects floating inputs.
void addBitwiseNot(OpRegistry& registry) {
  OpInfo info;
  info.name = "aten.bitwise_not";
  info.kind = OpKind::Elementwise;
  info.operands = {{"self"}};
  info.summary = "~self on integers, logical not on bool";
  info.infer = [](const std::vector<const Type*>& operands, const AttrMap& attrs) {
    const TensorType& self = tensorOperand(operands, 0, "aten.bitwise_not");
    if (isFloating(self.dtype))
      throw Error("dtype", "aten.bitwise_not: needs an integer or bool tensor, got " +
                               std::string(dtypeName(self.dtype)));
    return pointwiseInfer("aten.bitwise_not", promoted)(operands, attrs);
  };
  info.reference = [](const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
                      std::vector<Tensor>& outputs) {
    const bool isBool = outputs[0].dtype() == DType::Bool;
    pointwiseReference([isBool](const double* x, const AttrMap&) {
      return isBool ? double(x[0] == 0) : -x[0] - 1;
    })(inputs, attrs, outputs);
  };
  info.emitScalar = [](const std::vector<std::string>& args, const AttrMap&, DType compute) {
    return expandScalarTemplate(compute == DType::Bool ? "(!$0)" : "(~$0)", args, compute);
  };
  registry.add(std::move(info));
}

// ---- gelu and its backward: exact (erf) or the tanh approximation

constexpr double kSqrtHalf = std::numbers::sqrt2 / 2;                             // 1/sqrt(2)
constexpr double kSqrtTwoOverPi = std::numbers::sqrt2 * std::numbers::inv_sqrtpi; // sqrt(2/pi)
constexpr double kInvSqrtTwoPi = kSqrtHalf * std::numbers::inv_sqrtpi;            // 1/sqrt(2pi)
constexpr double kKappa = 0.044715;

bool geluIsTanh(const AttrMap& attrs) {
  const std::string& approximate = attrs.getString("approximate");
  if (approximate != "none" && approximate != "tanh")
    throw Error("attribute",
                "gelu: approximate must be \"none\" or \"tanh\", not \"" + approximate + "\"");
  return approximate == "tanh";
}

std::string lit(double v) {
  return "$T(" + formatFloat(v) + ")";
}

// tanh(sqrt(2/pi) * (x + kappa * x^3)) over the template operand `x`.
std::string geluTanhInner(const std::string& x) {
  return "loupe_tanh(" + lit(kSqrtTwoOverPi) + " * (" + x + " + " + lit(kKappa) + " * " + x +
         " * " + x + " * " + x + "))";
}
double geluTanhInner(double x) {
  return std::tanh(kSqrtTwoOverPi * (x + kKappa * x * x * x));
}

void addGelu(OpRegistry& registry) {
  const std::vector<AttrSpec> attrs = {{"approximate", std::string("none")}};
  addPointwise(registry, {"aten.gelu",
                          {{"self"}},
                          attrs,
                          "x * Phi(x), exact (erf) or tanh-approximated",
                          promotedToFloating,
                          [](const AttrMap& a, DType) {
                            return geluIsTanh(a)
                                       ? "($T(0.5) * $0 * ($T(1) + " + geluTanhInner("$0") + "))"
                                       : "($T(0.5) * $0 * ($T(1) + loupe_erf($0 * " +
                                             lit(kSqrtHalf) + ")))";
                          },
                          [](const double* x, const AttrMap& a) {
                            return geluIsTanh(a) ? 0.5 * x[0] * (1 + geluTanhInner(x[0]))
                                                 : 0.5 * x[0] * (1 + std::erf(x[0] * kSqrtHalf));
                          }});
  addPointwise(registry,
               {"aten.gelu_backward",
                {{"grad_output"}, {"self"}},
                attrs,
                "grad_output * gelu'(self), for the same approximation",
                promotedToFloating,
                [](const AttrMap& a, DType) {
                  if (!geluIsTanh(a))
                    return "($0 * ($T(0.5) * ($T(1) + loupe_erf($1 * " + lit(kSqrtHalf) +
                           ")) + $1 * " + lit(kInvSqrtTwoPi) + " * loupe_exp($T(-0.5) * $1 * $1)))";
                  const std::string t = geluTanhInner("$1");
                  return "($0 * ($T(0.5) * ($T(1) + " + t + ") + $T(0.5) * $1 * ($T(1) - " + t +
                         " * " + t + ") * " + lit(kSqrtTwoOverPi) + " * ($T(1) + " +
                         lit(3 * kKappa) + " * $1 * $1)))";
                },
                [](const double* x, const AttrMap& a) {
                  const double g = x[0], v = x[1];
                  if (!geluIsTanh(a))
                    return g * (0.5 * (1 + std::erf(v * kSqrtHalf)) +
                                v * kInvSqrtTwoPi * std::exp(-0.5 * v * v));
                  const double t = geluTanhInner(v);
                  return g * (0.5 * (1 + t) +
                              0.5 * v * (1 - t * t) * kSqrtTwoOverPi * (1 + 3 * kKappa * v * v));
                }});
}

// ---- clamp family: lower bound first, then upper, so min > max gives max as in torch;
// comparisons are false for NaN, which therefore passes through.

std::string clampTemplate(const AttrMap& attrs, const std::string& lower,
                          const std::string& upper) {
  std::string v = "$0";
  if (!attrs.isNone(lower)) v = "(" + v + " < @" + lower + " ? @" + lower + " : " + v + ")";
  if (!attrs.isNone(upper)) v = "(" + v + " > @" + upper + " ? @" + upper + " : " + v + ")";
  return v;
}

double clampValue(double x, const AttrMap& attrs, const std::string& lower,
                  const std::string& upper) {
  if (!attrs.isNone(lower) && x < attrs.getFloat(lower)) x = attrs.getFloat(lower);
  if (!attrs.isNone(upper) && x > attrs.getFloat(upper)) x = attrs.getFloat(upper);
  return x;
}

void addClamps(OpRegistry& registry) {
  struct Clamp {
    std::string name, lower, upper;
    std::vector<AttrSpec> attrs;
    std::string summary;
  };
  const std::vector<Clamp> clamps = {
      {"aten.clamp",
       "min",
       "max",
       {{"min", NoneAttr{}}, {"max", NoneAttr{}}},
       "self limited to [min, max] (either optional)"},
      {"aten.clamp_min", "min", "", {{"min", std::nullopt}}, "max(self, min)"},
      {"aten.clamp_max", "", "max", {{"max", std::nullopt}}, "min(self, max)"},
      {"aten.hardtanh",
       "min_val",
       "max_val",
       {{"min_val", -1.0}, {"max_val", 1.0}},
       "self limited to [min_val, max_val]"},
  };
  for (const Clamp& c : clamps) {
    std::vector<std::string> scalars;
    for (const AttrSpec& a : c.attrs)
      scalars.push_back(a.name);
    addPointwise(
        registry,
        {c.name,
         {{"self"}},
         c.attrs,
         c.summary,
         promotedWithScalars(scalars),
         [c](const AttrMap& a, DType) { return clampTemplate(a, c.lower, c.upper); },
         [c](const double* x, const AttrMap& a) { return clampValue(x[0], a, c.lower, c.upper); }});
  }
}

// ---- backward ops of activations (operands: grad_output, then self or the forward output)

void addActivationBackwards(OpRegistry& registry) {
  const std::string s = "($T(1) / ($T(1) + loupe_exp(-$1)))";
  const std::vector<PointwiseOp> ops = {
      {"aten.threshold_backward",
       {{"grad_output"}, {"self"}},
       {{"threshold", std::nullopt}},
       "grad_output where self > threshold, else 0",
       promoted,
       fixed("($1 <= @threshold ? $T(0) : $0)"),
       [](const double* x, const AttrMap& a) {
         return x[1] <= a.getFloat("threshold") ? 0 : x[0];
       }},
      {"aten.sigmoid_backward",
       {{"grad_output"}, {"output"}},
       {},
       "grad_output * (1 - output) * output",
       promoted,
       fixed("($0 * ($T(1) - $1) * $1)"),
       [](const double* x, const AttrMap&) { return x[0] * (1 - x[1]) * x[1]; }},
      {"aten.tanh_backward",
       {{"grad_output"}, {"output"}},
       {},
       "grad_output * (1 - output^2)",
       promoted,
       fixed("($0 * ($T(1) - $1 * $1))"),
       [](const double* x, const AttrMap&) { return x[0] * (1 - x[1] * x[1]); }},
      {"aten.silu_backward",
       {{"grad_output"}, {"self"}},
       {},
       "grad_output * sigmoid(self) * (1 + self * (1 - sigmoid(self)))",
       promoted,
       fixed("($0 * " + s + " * ($T(1) + $1 * ($T(1) - " + s + ")))"),
       [](const double* x, const AttrMap&) {
         const double sg = sigmoid(x[1]);
         return x[0] * sg * (1 + x[1] * (1 - sg));
       }},
  };
  for (const auto& op : ops)
    addPointwise(registry, op);
}

// true_divide is div's older name, still produced when `/` divides by a tensor derived from a
// symbolic size; it is the same op, so it shares div's formula rather than restating it.
void addTrueDivide(OpRegistry& registry, const std::vector<BinaryOp>& binaries) {
  auto div = std::find_if(binaries.begin(), binaries.end(),
                          [](const BinaryOp& op) { return op.tensorName == "aten.div.Tensor"; });
  BinaryOp trueDivide = *div;
  trueDivide.tensorName = "aten.true_divide.Tensor";
  trueDivide.scalarName.clear();
  addBinary(registry, trueDivide);
}

// ---- dropout
//
// The masks come from a counter-based stream of Loupe's own (dropout_mask.h): a run is
// reproducible and each call draws a fresh mask, but the masks are not torch's (a different
// generator), so results equal eager only when dropout is off (p == 0 or train == false).
// native_dropout is impure: CSE must not merge two draws, nor DCE drop one (it advances the
// stream). Its library kernel (compiler/codegen/cpu/library/dropout.h) draws the same masks.

void addDropout(OpRegistry& registry) {
  OpInfo info;
  info.name = "aten.native_dropout";
  info.kind = OpKind::Other;
  info.operands = {{"input"}};
  info.attrs = {{"p", std::nullopt}, {"train", NoneAttr{}}};
  info.pure = false;
  info.summary = "input with elements zeroed with probability p and the rest scaled by 1/(1-p), "
                 "and the bool mask of kept elements (Loupe's counter-based stream: masks differ "
                 "from torch)";
  info.infer = [](const std::vector<const Type*>& operands, const AttrMap&) {
    const TensorType& input = tensorOperand(operands, 0, "aten.native_dropout");
    if (!isFloating(input.dtype))
      throw Error("dtype",
                  "aten.native_dropout: input must be floating point, got " + Type(input).str());
    return std::vector<Type>{input.withShape(input.shape),
                             input.withShape(input.shape).withDType(DType::Bool)};
  };
  info.reference = [](const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
                      std::vector<Tensor>& outputs) {
    const double p = attrs.getFloat("p");
    // torch treats an absent `train` as training
    const bool train = attrs.isNone("train") || attrs.getBool("train");
    const Tensor& input = *inputs[0];
    const uint64_t first = train ? reserveDropoutDraws(static_cast<uint64_t>(input.numel())) : 0;
    const uint32_t threshold = dropoutThreshold(p);
    // 1 / (1 - p) in the input's dtype: the product of two floats is exact in double, so it
    // rounds to the float product the kernel computes.
    const double scale = Tensor::fromDoubles({train ? 1 / (1 - p) : 1.0}, input.dtype(), {}).at(0);
    for (int64_t i = 0; i < input.numel(); ++i) {
      const bool keep = !train || dropoutKeeps(first + static_cast<uint64_t>(i), threshold);
      outputs[0].set(i, input.at(i) * (keep ? scale : 0.0));
      outputs[1].set(i, keep ? 1.0 : 0.0);
    }
  };
  registry.add(std::move(info));

  addPointwise(registry, {"aten.native_dropout_backward",
                          {{"grad_output"}, {"mask"}},
                          {{"scale", std::nullopt}},
                          "grad_output * mask * scale",
                          [](const Operands& operands, const AttrMap&) {
                            if (operands[1]->dtype != DType::Bool)
                              throw Error("dtype",
                                          "aten.native_dropout_backward: mask must be bool, got " +
                                              std::string(dtypeName(operands[1]->dtype)));
                            return operands[0]->dtype;
                          },
                          fixed("($1 ? $0 * @scale : $T(0))"),
                          [](const double* x, const AttrMap& a) {
                            return x[1] != 0 ? x[0] * a.getFloat("scale") : 0.0;
                          }});
}

// ---- fused multiply-add

// prims.fma: what Dynamo makes of addcmul with a value (every compiled Adam and AdamW step has
// one per parameter): a * b + c rounded once, as Inductor computes it (loupe_fma is fmaf in both
// preludes; the fused instruction where the instruction set has one).
void addFusedMultiplyAdd(OpRegistry& registry) {
  addPointwise(registry,
               {"prims.fma",
                {{"a"}, {"b"}, {"c"}},
                {},
                "a * b + c, rounded once",
                promoted,
                byComputeKind("loupe_fma($0, $1, $2)", "($0 * $1 + $2)"),
                [](const double* x, const AttrMap&) { return std::fma(x[0], x[1], x[2]); }});
}

// ---- selection: where, masked_fill

void addSelection(OpRegistry& registry) {
  addPointwise(registry, {"aten.where.self",
                          {{"condition"}, {"self"}, {"other"}},
                          {},
                          "self where condition, else other",
                          [](const Operands& operands, const AttrMap&) {
                            if (operands[0]->dtype != DType::Bool)
                              throw Error("dtype", "aten.where.self: condition must be bool, got " +
                                                       std::string(dtypeName(operands[0]->dtype)));
                            return resultType({operands[1], operands[2]});
                          },
                          fixed("($0 ? $1 : $2)"),
                          [](const double* x, const AttrMap&) { return x[0] != 0 ? x[1] : x[2]; }});

  // masked_fill keeps self's shape and dtype: the mask must broadcast to self, not widen it.
  auto maskedFillInfer = [](std::string name) {
    return [name](const std::vector<const Type*>& operands, const AttrMap& attrs) {
      const TensorType& self = tensorOperand(operands, 0, name);
      auto types = pointwiseInfer(
          name, [&](const Operands&, const AttrMap&) { return self.dtype; })(operands, attrs);
      if (types[0].tensor().shape != self.shape)
        throw Error("shape",
                    name + ": mask of shape [" + shapeStr(tensorOperand(operands, 1, name).shape) +
                        "] does not broadcast to self's shape [" + shapeStr(self.shape) + "]");
      return types;
    };
  };
  addPointwise(registry, {"aten.masked_fill.Scalar",
                          {{"self"}, {"mask"}},
                          {{"value", std::nullopt}},
                          "value where mask, else self",
                          nullptr,
                          fixed("($1 ? @value : $0)"),
                          [](const double* x, const AttrMap& a) {
                            return x[1] != 0 ? a.getFloat("value") : x[0];
                          },
                          nullptr,
                          maskedFillInfer("aten.masked_fill.Scalar")});
  addPointwise(registry, {"aten.masked_fill.Tensor",
                          {{"self"}, {"mask"}, {"value"}},
                          {},
                          "value (a 0-d tensor) where mask, else self",
                          nullptr,
                          fixed("($1 ? $2 : $0)"),
                          [](const double* x, const AttrMap&) { return x[1] != 0 ? x[2] : x[0]; },
                          nullptr,
                          maskedFillInfer("aten.masked_fill.Tensor")});
}

// ---- rsub: other - alpha * self, decomposed into sub.Tensor of a constant

void addRsub(OpRegistry& registry) {
  const std::vector<AttrSpec> attrs = {{"other", std::nullopt}, {"alpha", SymExpr(1)}};
  addPointwise(
      registry,
      {"aten.rsub.Scalar",
       {{"self"}},
       attrs,
       "other - alpha * self (other a scalar)",
       promotedWithScalars({"other"}),
       fixed("(@other - @alpha * $0)"),
       [](const double* x, const AttrMap& a) {
         return a.getFloat("other") - a.getFloat("alpha") * x[0];
       },
       [attrs](Node& node, GraphBuilder& builder) -> std::vector<Value*> {
         AttrMap full = withDefaults(node.attrs(), attrs);
         if (const auto* e = std::get_if<SymExpr>(full.find("other")); e && !e->isConstant())
           return {};
         // A 0-d constant in the result dtype promotes exactly as the Python scalar did.
         const TensorType& result = node.result()->tensorType();
         Value* other = builder.scalar(full.getFloat("other"), result.dtype, result.device);
         AttrMap subAttrs;
         subAttrs.set("alpha", *full.find("alpha"));
         return {builder.op("aten.sub.Tensor", {other, node.operand(0)}, std::move(subAttrs))};
       }});
}

// ---- dtype conversion: the cast is explicit so a fused chain truncates where torch does.

void addConversions(OpRegistry& registry) {
  DTypeRule converted = [](const Operands& operands, const AttrMap& attrs) {
    return attrs.getOptionalDType("dtype").value_or(operands[0]->dtype);
  };
  TemplateFn cast = [](const AttrMap& attrs, DType) -> std::string {
    auto target = attrs.getOptionalDType("dtype");
    return target ? "static_cast<" + std::string(computeTypeName(*target)) + ">($0)" : "$0";
  };
  PointwiseFn identity = [](const double* x, const AttrMap&) { return x[0]; };
  addPointwise(registry, {"aten._to_copy",
                          {{"self"}},
                          {{"dtype", NoneAttr{}},
                           {"layout", NoneAttr{}},
                           {"device", NoneAttr{}},
                           {"pin_memory", NoneAttr{}},
                           {"non_blocking", false},
                           {"memory_format", NoneAttr{}}},
                          "a copy converted to dtype (layout, device and pinning are not modelled)",
                          converted,
                          cast,
                          identity});
  addPointwise(registry, {"prims.convert_element_type",
                          {{"a"}},
                          {{"dtype", std::nullopt}},
                          "a converted to dtype",
                          converted,
                          cast,
                          identity});
}

} // namespace

void registerElementwiseOps(OpRegistry& registry) {
  const std::vector<BinaryOp> binaries = binaryOps();
  for (const BinaryOp& op : binaries)
    addBinary(registry, op);
  addTrueDivide(registry, binaries);
  addDivWithRoundingMode(registry);
  for (const UnaryOp& op : unaryOps())
    addUnary(registry, op);
  addBitwiseNot(registry);
  addGelu(registry);
  addClamps(registry);
  addActivationBackwards(registry);
  addDropout(registry);
  addFusedMultiplyAdd(registry);
  addSelection(registry);
  addRsub(registry);
  addConversions(registry);
}

} // namespace loupe
