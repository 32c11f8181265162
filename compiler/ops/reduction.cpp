// Reductions over some dims of one tensor: sum, mean, prod, amax/amin, any/all, the arg and
// value+index variants (argmax, max.dim), and var / var_mean with Bessel's correction; and the
// running sum along one dim (cumsum), which keeps the shape but accumulates as sum does.
//
// They share one shape rule (dims normalised, absent or empty dim list = every dim, keepdim)
// and one reference loop that gathers each output element's inputs and folds them in double.
// mean, var and var_mean are composite: they decompose into sum, sub, mul and div.
#include <algorithm>
#include <cmath>
#include <limits>

#include "compiler/ir/error.h"
#include "compiler/ops/dims.h"
#include "compiler/ops/graph_builder.h"
#include "compiler/ops/op_registry.h"
#include "compiler/ops/pointwise.h"

namespace loupe {

namespace {

// ---- result dtypes (torch's rules), given the op name for error messages

using ResultDType = DType (*)(std::string_view op, DType self, const AttrMap& attrs);

// sum and prod: integers and bool accumulate in i64 unless dtype= says otherwise.
DType accumulated(std::string_view, DType self, const AttrMap& attrs) {
  return attrs.getOptionalDType("dtype").value_or(isFloating(self) ? self : DType::I64);
}

DType floatingOnly(std::string_view op, DType self, const AttrMap& attrs) {
  DType result = attrs.getOptionalDType("dtype").value_or(self);
  if (!isFloating(result))
    throw Error("dtype", std::string(op) + ": needs a floating input or dtype=, got " +
                             std::string(dtypeName(result)));
  return result;
}

DType sameAsInput(std::string_view, DType self, const AttrMap&) {
  return self;
}
DType indices(std::string_view, DType, const AttrMap&) {
  return DType::I64;
}
// any/all give bool, except for u8 inputs (a torch compatibility rule).
DType truthValue(std::string_view, DType self, const AttrMap&) {
  return self == DType::U8 ? DType::U8 : DType::Bool;
}

// ---- folds: every input element of one output element, in row-major order of the input

using Fold = void (*)(const std::vector<double>& group, const AttrMap& attrs, double* out);

double nanPropagatingMax(double acc, double x) {
  return std::isnan(x) || x > acc ? x : acc;
}
double nanPropagatingMin(double acc, double x) {
  return std::isnan(x) || x < acc ? x : acc;
}

template <double (*Pick)(double, double), int Sign>
void extreme(const std::vector<double>& group, const AttrMap&, double* out) {
  double acc = Sign * std::numeric_limits<double>::infinity();
  for (double x : group)
    acc = Pick(acc, x);
  out[0] = acc;
}

// Position of the first maximum (Greater) or minimum; NaN wins over any number, as in torch.
template <bool Greater>
size_t extremeIndex(const std::vector<double>& group) {
  size_t best = 0;
  for (size_t i = 1; i < group.size(); ++i) {
    if (std::isnan(group[best])) break;
    if (std::isnan(group[i]) || (Greater ? group[i] > group[best] : group[i] < group[best]))
      best = i;
  }
  return best;
}

template <bool Greater>
void argExtreme(const std::vector<double>& group, const AttrMap&, double* out) {
  out[0] = static_cast<double>(extremeIndex<Greater>(group));
}

template <bool Greater>
void valueAndIndex(const std::vector<double>& group, const AttrMap&, double* out) {
  size_t best = extremeIndex<Greater>(group);
  out[0] = group.empty() ? std::nan("") : group[best];
  out[1] = static_cast<double>(best);
}

void sumFold(const std::vector<double>& group, const AttrMap&, double* out) {
  out[0] = 0;
  for (double x : group)
    out[0] += x;
}

void meanFold(const std::vector<double>& group, const AttrMap& attrs, double* out) {
  sumFold(group, attrs, out);
  out[0] /= static_cast<double>(group.size());
}

void prodFold(const std::vector<double>& group, const AttrMap&, double* out) {
  out[0] = 1;
  for (double x : group)
    out[0] *= x;
}

void anyFold(const std::vector<double>& group, const AttrMap&, double* out) {
  out[0] = 0;
  for (double x : group)
    out[0] = out[0] != 0 || x != 0;
}

void allFold(const std::vector<double>& group, const AttrMap&, double* out) {
  out[0] = 1;
  for (double x : group)
    out[0] = out[0] != 0 && x != 0;
}

double correctionOf(const AttrMap& attrs) {
  return attrs.getFloat("correction", 1.0);
}

// Two passes (mean, then squared deviations) for accuracy; out = {var, mean}.
void varianceFold(const std::vector<double>& group, const AttrMap& attrs, double* out) {
  double mean = 0;
  meanFold(group, attrs, &mean);
  double squares = 0;
  for (double x : group)
    squares += (x - mean) * (x - mean);
  out[0] = squares / (static_cast<double>(group.size()) - correctionOf(attrs));
  out[1] = mean;
}

// ---- recipes for generated code

// The identity of max (lowest) or min (!lowest) for an accumulator of `dtype`.
std::string extremeLiteral(DType dtype, bool lowest) {
  if (isFloating(dtype)) return lowest ? "-INFINITY" : "INFINITY";
  switch (dtype) {
  case DType::Bool:
    return lowest ? "false" : "true";
  case DType::U8:
    return lowest ? "0" : "255";
  case DType::I8:
    return lowest ? "-128" : "127";
  case DType::I16:
    return lowest ? "-32768" : "32767";
  case DType::I32:
    return lowest ? "(-2147483647 - 1)" : "2147483647";
  default:
    return lowest ? "(-9223372036854775807LL - 1)" : "9223372036854775807LL";
  }
}

ReductionRecipe foldRecipe(std::string init, std::string combineOp) {
  return {[init](DType) { return init; },
          [combineOp](const std::string& acc, const std::string& x) {
            return "(" + acc + " " + combineOp + " " + x + ")";
          },
          [](const std::string& acc, const std::string&) { return acc; }};
}

ReductionRecipe sumRecipe() {
  return foldRecipe("0", "+");
}

ReductionRecipe meanRecipe() {
  ReductionRecipe r = sumRecipe();
  r.finalize = [](const std::string& acc, const std::string& count) {
    return "(" + acc + " / " + count + ")";
  };
  return r;
}

// NaN-propagating like the reference: a NaN x replaces acc, a NaN acc stays.
ReductionRecipe extremeRecipe(bool greater) {
  return {[greater](DType dtype) { return extremeLiteral(dtype, greater); },
          [greater](const std::string& acc, const std::string& x) {
            return "((" + x + " != " + x + " || " + x + (greater ? " > " : " < ") + acc + ") ? " +
                   x + " : " + acc + ")";
          },
          [](const std::string& acc, const std::string&) { return acc; }};
}

ReductionRecipe truthRecipe(bool any) {
  return {[any](DType) { return std::string(any ? "false" : "true"); },
          [any](const std::string& acc, const std::string& x) {
            return "(" + acc + (any ? " || " : " && ") + "(" + x + " != 0))";
          },
          [](const std::string& acc, const std::string&) { return acc; }};
}

// ---- decompositions

// The node's reduced dims as an explicit, normalised dim list.
IntList reducedDimList(const std::vector<bool>& reduced) {
  IntList dims;
  for (size_t i = 0; i < reduced.size(); ++i)
    if (reduced[i]) dims.push_back(static_cast<int64_t>(i));
  return dims;
}

struct ReductionSite {
  Value* input;
  IntList dims;
  SymExpr count;
};

ReductionSite siteOf(Node& node) {
  const Shape& shape = node.operand(0)->tensorType().shape;
  auto reduced = reducedDims(node.attrs(), "dim", shape.size(), node.op());
  return {node.operand(0), reducedDimList(reduced), reducedCount(shape, reduced)};
}

Value* sumOver(GraphBuilder& b, Value* x, const IntList& dims, bool keepdim,
               std::optional<DType> dtype = std::nullopt) {
  AttrMap attrs;
  attrs.set("dim", dims);
  attrs.set("keepdim", keepdim);
  if (dtype) attrs.set("dtype", *dtype);
  return b.op("aten.sum.dim_IntList", {x}, std::move(attrs));
}

Value* divideBy(GraphBuilder& b, Value* x, Attribute divisor) {
  AttrMap attrs;
  attrs.set("other", std::move(divisor));
  return b.op("aten.div.Scalar", {x}, std::move(attrs));
}

std::vector<Value*> decomposeMean(Node& node, GraphBuilder& b) {
  ReductionSite site = siteOf(node);
  Value* sum = sumOver(b, site.input, site.dims, node.attrs().getBool("keepdim", false),
                       node.attrs().getOptionalDType("dtype"));
  return {divideBy(b, sum, site.count)};
}

// var = sum((x - mean)^2) / (N - correction), mean kept with keepdim for the broadcast.
// Returns {var, mean}; empty when a fractional correction meets a symbolic N.
std::vector<Value*> decomposeVarMean(Node& node, GraphBuilder& b) {
  ReductionSite site = siteOf(node);
  const bool keepdim = node.attrs().getBool("keepdim", false);
  Attribute divisor;
  const Attribute* correction = node.attrs().find("correction");
  if (const auto* c = correction ? std::get_if<double>(correction) : nullptr) {
    auto n = site.count.constant();
    if (!n) return {};
    divisor = static_cast<double>(*n) - *c;
  } else {
    divisor = site.count -
              (node.attrs().isNone("correction") ? SymExpr(1) : node.attrs().getDim("correction"));
  }
  Value* meanKept = divideBy(b, sumOver(b, site.input, site.dims, true), site.count);
  Value* diff = b.op("aten.sub.Tensor", {site.input, meanKept});
  Value* squares = b.op("aten.mul.Tensor", {diff, diff});
  Value* var = divideBy(b, sumOver(b, squares, site.dims, keepdim), divisor);
  Value* mean =
      keepdim ? meanKept : divideBy(b, sumOver(b, site.input, site.dims, false), site.count);
  return {var, mean};
}

// ---- the table

struct ReductionOp {
  std::string name;
  std::vector<AttrSpec> attrs; // "dim" (if any), "keepdim", ...
  std::string summary;
  std::vector<ResultDType> results;
  Fold fold;
  std::optional<ReductionRecipe> recipe;
  DecomposeFn decompose;
};

InferFn reductionInfer(std::string name, std::vector<ResultDType> results) {
  return [name = std::move(name), results = std::move(results)](
             const std::vector<const Type*>& operands, const AttrMap& attrs) {
    const TensorType& self = tensorOperand(operands, 0, name);
    auto reduced = reducedDims(attrs, "dim", self.rank(), name);
    TensorType out =
        self.withShape(reducedShape(self.shape, reduced, attrs.getBool("keepdim", false)));
    std::vector<Type> types;
    for (ResultDType dtype : results)
      types.push_back(out.withDType(dtype(name, self.dtype, attrs)));
    return types;
  };
}

ReferenceFn reductionReference(std::string name, Fold fold) {
  return [name = std::move(name), fold](const std::vector<const Tensor*>& inputs,
                                        const AttrMap& attrs, std::vector<Tensor>& outputs) {
    const Tensor& in = *inputs[0];
    auto reduced = reducedDims(attrs, "dim", in.rank(), name);
    std::vector<std::vector<double>> groups(static_cast<size_t>(outputs[0].numel()));
    for (int64_t i = 0; i < in.numel(); ++i) {
      int64_t rest = i, group = 0, stride = 1;
      for (size_t d = in.rank(); d-- > 0;) {
        const int64_t index = rest % in.size(d);
        rest /= in.size(d);
        if (reduced[d]) continue;
        group += index * stride;
        stride *= in.size(d);
      }
      groups[static_cast<size_t>(group)].push_back(in.at(i));
    }
    // A fold may produce more values than the op has results (var uses the variance fold,
    // which also yields the mean): size for the widest fold.
    std::vector<double> values(std::max<size_t>(outputs.size(), 2));
    for (size_t g = 0; g < groups.size(); ++g) {
      fold(groups[g], attrs, values.data());
      for (size_t r = 0; r < outputs.size(); ++r)
        outputs[r].set(static_cast<int64_t>(g), values[r]);
    }
  };
}

std::vector<ReductionOp> reductionOps() {
  const AttrSpec dims{"dim", NoneAttr{}};
  const AttrSpec oneDim{"dim", std::nullopt};
  const AttrSpec keepdim{"keepdim", false};
  const AttrSpec dtype{"dtype", NoneAttr{}};
  const AttrSpec correction{"correction", NoneAttr{}};
  const ReductionRecipe sum = sumRecipe(), mean = meanRecipe(), prod = foldRecipe("1", "*");
  return {
      {"aten.sum", {dtype}, "sum of every element", {accumulated}, sumFold, sum},
      {"aten.sum.dim_IntList",
       {dims, keepdim, dtype},
       "sum over dim (none or [] = all)",
       {accumulated},
       sumFold,
       sum},
      {"aten.mean",
       {dtype},
       "mean of every element",
       {floatingOnly},
       meanFold,
       mean,
       decomposeMean},
      {"aten.mean.dim",
       {dims, keepdim, dtype},
       "mean over dim (none or [] = all)",
       {floatingOnly},
       meanFold,
       mean,
       decomposeMean},
      {"aten.prod", {dtype}, "product of every element", {accumulated}, prodFold, prod},
      {"aten.prod.dim_int",
       {oneDim, keepdim, dtype},
       "product over one dim",
       {accumulated},
       prodFold,
       prod},
      {"aten.amax",
       {{"dim", IntList{}}, keepdim},
       "maximum over dim ([] = all), NaN propagating",
       {sameAsInput},
       extreme<nanPropagatingMax, -1>,
       extremeRecipe(true)},
      {"aten.amin",
       {{"dim", IntList{}}, keepdim},
       "minimum over dim ([] = all), NaN propagating",
       {sameAsInput},
       extreme<nanPropagatingMin, 1>,
       extremeRecipe(false)},
      {"aten.any", {}, "whether any element is nonzero", {truthValue}, anyFold, truthRecipe(true)},
      {"aten.any.dim",
       {oneDim, keepdim},
       "whether any element over dim is nonzero",
       {truthValue},
       anyFold,
       truthRecipe(true)},
      {"aten.any.dims",
       {dims, keepdim},
       "whether any element over dims is nonzero",
       {truthValue},
       anyFold,
       truthRecipe(true)},
      {"aten.all",
       {},
       "whether every element is nonzero",
       {truthValue},
       allFold,
       truthRecipe(false)},
      {"aten.all.dim",
       {oneDim, keepdim},
       "whether every element over dim is nonzero",
       {truthValue},
       allFold,
       truthRecipe(false)},
      {"aten.argmax",
       {dims, keepdim},
       "index of the first maximum (flattened if no dim)",
       {indices},
       argExtreme<true>},
      {"aten.argmin",
       {dims, keepdim},
       "index of the first minimum (flattened if no dim)",
       {indices},
       argExtreme<false>},
      {"aten.max.dim",
       {oneDim, keepdim},
       "maximum over dim and its first index",
       {sameAsInput, indices},
       valueAndIndex<true>},
      {"aten.min.dim",
       {oneDim, keepdim},
       "minimum over dim and its first index",
       {sameAsInput, indices},
       valueAndIndex<false>},
      {"aten.var.correction",
       {dims, correction, keepdim},
       "variance over dim, divided by N - correction (default 1)",
       {floatingOnly},
       varianceFold,
       std::nullopt,
       [](Node& node, GraphBuilder& b) {
         auto varMean = decomposeVarMean(node, b);
         return varMean.empty() ? varMean : std::vector<Value*>{varMean[0]};
       }},
      {"aten.var_mean.correction",
       {dims, correction, keepdim},
       "variance (as var.correction) and mean over dim",
       {floatingOnly, floatingOnly},
       varianceFold,
       std::nullopt,
       decomposeVarMean},
  };
}

// cumsum: out[..., k, ...] = sum of self[..., 0..k, ...] along dim, accumulated in double and
// in sum's result dtype (integers and bool in i64 unless dtype= says otherwise).
OpInfo cumsumOp() {
  constexpr std::string_view op = "aten.cumsum";
  OpInfo info;
  info.name = op;
  info.kind = OpKind::Other;
  info.operands = {{"self"}};
  info.attrs = {{"dim", std::nullopt}, {"dtype", NoneAttr{}}};
  info.summary = "running sum along dim (integers accumulate in i64)";
  info.infer = [op](const std::vector<const Type*>& operands, const AttrMap& attrs) {
    const TensorType& self = tensorOperand(operands, 0, op);
    normalizeDim(attrs.getInt("dim"), self.rank(), op);
    return std::vector<Type>{
        self.withShape(self.shape).withDType(accumulated(op, self.dtype, attrs))};
  };
  info.reference = [op](const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
                        std::vector<Tensor>& outputs) {
    const Tensor& self = *inputs[0];
    const size_t d = normalizeDim(attrs.getInt("dim"), self.rank(), op);
    // Elements k and k+1 of a line along dim are `stride` apart in row-major order.
    int64_t stride = 1;
    for (size_t i = d + 1; i < self.rank(); ++i)
      stride *= self.size(i);
    const int64_t length = self.rank() == 0 ? 1 : self.size(d);
    std::vector<double> running(static_cast<size_t>(self.numel()));
    for (int64_t i = 0; i < self.numel(); ++i) {
      const bool first = (i / stride) % length == 0;
      running[static_cast<size_t>(i)] =
          self.at(i) + (first ? 0.0 : running[static_cast<size_t>(i - stride)]);
      outputs[0].set(i, running[static_cast<size_t>(i)]);
    }
  };
  return info;
}

} // namespace

void registerReductionOps(OpRegistry& registry) {
  for (ReductionOp& op : reductionOps()) {
    OpInfo info;
    info.name = op.name;
    info.kind = OpKind::Reduction;
    info.operands = {{"self"}};
    info.attrs = op.attrs;
    info.numResults = static_cast<int>(op.results.size());
    info.summary = op.summary;
    info.infer = reductionInfer(op.name, op.results);
    info.reference = reductionReference(op.name, op.fold);
    info.reduction = op.recipe;
    info.decompose = op.decompose;
    registry.add(std::move(info));
  }
  registry.add(cumsumOp());
}

} // namespace loupe
