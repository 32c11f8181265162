// Normalization ops: softmax and log-softmax, layer norm, batch norm (the functional, inference
// and legacy forward forms aot_autograd emits) and their backward ops.
//
// Formulas follow torch's Python decompositions (torch/_decomp/decompositions.py, _refs):
// statistics use the biased variance and rstd = 1 / sqrt(var + eps); the running variance is
// updated with the unbiased one. Where torch's result shapes or dtypes depend on the device,
// the result type does too: on CPU, layer norm's mean/rstd and batch norm's saved statistics
// have the input's dtype and inference-mode batch norm saves empty [0] statistics; on CUDA
// they are in the compute dtype (f32 for f16/bf16) and inference saves the running stats.
//
// Backward results whose output_mask entry is false are still produced, as zeros of the
// right shape (torch returns None there), so every node has a fixed number of results.
//
// Softmax, log-softmax, softmax's backward and layer norm forward and backward decompose into
// elementwise and reduction ops in every floating dtype (computed in f32 for bf16 and f16, as
// torch does: see inMathDType), which fusion then turns into generated kernels.
#include <cmath>
#include <functional>
#include <limits>

#include "compiler/ir/error.h"
#include "compiler/ops/dims.h"
#include "compiler/ops/graph_builder.h"
#include "compiler/ops/op_registry.h"
#include "compiler/ops/pointwise.h"

namespace loupe {
namespace {

using Doubles = std::vector<double>;

size_t at(int64_t i) {
  return static_cast<size_t>(i);
}

void store(Tensor& out, const Doubles& values) {
  for (int64_t i = 0; i < out.numel(); ++i)
    out.set(i, values[at(i)]);
}

void expectShape(const TensorType& actual, const Shape& expected, std::string_view op,
                 const char* what) {
  if (actual.shape != expected)
    throw Error("shape", std::string(op) + ": " + what + " has shape [" + shapeStr(actual.shape) +
                             "], expected [" + shapeStr(expected) + "]");
}

// Backward results: masked-off ones are zeros (see the file comment).
void storeMasked(std::vector<Tensor>& outputs, const BoolList& mask,
                 const std::vector<Doubles>& grads) {
  for (size_t i = 0; i < outputs.size(); ++i)
    store(outputs[i], mask[i] ? grads[i] : Doubles(at(outputs[i].numel()), 0.0));
}

// The dtype torch keeps normalization statistics in (see the file comment).
DType statsDType(const TensorType& input) {
  return input.device.kind == Device::Kind::CUDA ? accumulationDType(input.dtype) : input.dtype;
}

OpInfo normalizationOp(std::string name, std::vector<OperandSpec> operands,
                       std::vector<AttrSpec> attrs, int numResults, std::string summary) {
  OpInfo info;
  info.name = std::move(name);
  info.kind = OpKind::Normalization;
  info.operands = std::move(operands);
  info.attrs = std::move(attrs);
  info.numResults = numResults;
  info.summary = std::move(summary);
  return info;
}

// Decompositions compute in the op's math dtype, as torch's kernels do: f64 stays f64, every
// other floating dtype (f32, bf16, f16) computes in f32. `inMathDType` wraps a decomposition
// written for one math dtype: it hands it the node's floating operands converted to that dtype
// (prims.convert_element_type, which fuses into the kernels that read them) and converts each
// replacement to the dtype of the result it stands for. One rule serves every dtype, so a bf16
// layer norm becomes one row kernel like an f32 one instead of running as its aten op.
using MathDecomposeFn = std::function<std::vector<Value*>(
    Node& node, const std::vector<Value*>& operands, GraphBuilder& b)>;

DType mathDType(DType dtype) {
  return dtype == DType::F64 ? DType::F64 : DType::F32;
}

Value* converted(GraphBuilder& b, Value* value, DType dtype) {
  if (!value || value->tensorType().dtype == dtype) return value;
  AttrMap attrs;
  attrs.set("dtype", dtype);
  return b.op("prims.convert_element_type", {value}, std::move(attrs));
}

DecomposeFn inMathDType(MathDecomposeFn decompose) {
  return [decompose = std::move(decompose)](Node& node, GraphBuilder& b) -> std::vector<Value*> {
    std::optional<DType> math;
    for (const Value* operand : node.operands()) {
      if (!operand || !operand->type().isTensor()) continue;
      DType dtype = operand->tensorType().dtype;
      if (!isFloating(dtype)) return {};
      math = math == DType::F64 ? DType::F64 : mathDType(dtype);
    }
    if (!math) return {};
    std::vector<Value*> operands;
    for (Value* operand : node.operands())
      operands.push_back(operand && operand->type().isTensor() ? converted(b, operand, *math)
                                                               : operand);
    std::vector<Value*> results = decompose(node, operands, b);
    for (size_t i = 0; i < results.size() && i < node.numResults(); ++i)
      results[i] = converted(b, results[i], node.result(i)->tensorType().dtype);
    return results;
  };
}

AttrMap keepDims(IntList dims) {
  AttrMap attrs;
  attrs.set("dim", std::move(dims));
  attrs.set("keepdim", true);
  return attrs;
}

// ---- softmax and log-softmax along one dim

// A tensor seen as [outer, size, inner] around the softmax dim.
struct SoftmaxLines {
  int64_t outer = 1, size = 1, inner = 1;

  SoftmaxLines(const std::vector<int64_t>& shape, int64_t dim, std::string_view op) {
    size_t d = normalizeDim(dim, shape.size(), op);
    for (size_t i = 0; i < shape.size(); ++i)
      (i < d ? outer : i == d ? size : inner) *= shape[i];
  }

  // visit(index of element k of the line) for k in [0, size), once per line.
  void forEachLine(const std::function<void(const std::function<int64_t(int64_t)>&)>& visit) const {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i)
        visit([&](int64_t k) { return (o * size + k) * inner + i; });
  }
};

std::vector<Type> inferSoftmax(std::string_view op, const std::vector<const Type*>& operands,
                               const AttrMap& attrs) {
  const TensorType& self = tensorOperand(operands, 0, op);
  normalizeDim(attrs.getInt("dim"), self.rank(), op);
  if (!isFloating(self.dtype))
    throw Error("shape", std::string(op) + ": expected a floating-point input, got " +
                             std::string(dtypeName(self.dtype)));
  bool halfToFloat = attrs.getBool("half_to_float", false);
  if (halfToFloat && self.dtype != DType::F16)
    throw Error("shape", std::string(op) + ": half_to_float needs an f16 input");
  return {self.withShape(self.shape).withDType(halfToFloat ? DType::F32 : self.dtype)};
}

// `safe`: a line that is -inf throughout (attention to nothing but padding) gives zeros
// instead of NaN, as _safe_softmax does.
ReferenceFn softmaxReference(bool log, bool safe = false) {
  return [log, safe](const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
                     std::vector<Tensor>& outputs) {
    SoftmaxLines lines(inputs[0]->shape(), attrs.getInt("dim"), "softmax");
    Doubles x = inputs[0]->toDoubles(), y(x.size());
    lines.forEachLine([&](const std::function<int64_t(int64_t)>& index) {
      double max = -std::numeric_limits<double>::infinity();
      for (int64_t k = 0; k < lines.size; ++k)
        max = std::max(max, x[at(index(k))]);
      if (safe && max == -std::numeric_limits<double>::infinity()) {
        for (int64_t k = 0; k < lines.size; ++k)
          y[at(index(k))] = 0;
        return;
      }
      double sum = 0;
      for (int64_t k = 0; k < lines.size; ++k)
        sum += std::exp(x[at(index(k))] - max);
      for (int64_t k = 0; k < lines.size; ++k) {
        double shifted = x[at(index(k))] - max;
        y[at(index(k))] = log ? shifted - std::log(sum) : std::exp(shifted) / sum;
      }
    });
    store(outputs[0], y);
  };
}

// softmax(x) = exp(x - max) / sum(exp(x - max)); log_softmax = (x - max) - log(sum(...)).
DecomposeFn softmaxDecomposition(bool log) {
  return inMathDType([log](Node& node, const std::vector<Value*>& operands,
                           GraphBuilder& b) -> std::vector<Value*> {
    Value* x = operands[0];
    AttrMap keep = keepDims({node.attrs().getDim("dim")});
    Value* shifted = b.op("aten.sub.Tensor", {x, b.op("aten.amax", {x}, keep)});
    Value* exp = b.op("aten.exp", {shifted});
    Value* sum = b.op("aten.sum.dim_IntList", {exp}, keep);
    if (log) return {b.op("aten.sub.Tensor", {shifted, b.op("aten.log", {sum})})};
    return {b.op("aten.div.Tensor", {exp, sum})};
  });
}

std::vector<Type> inferSoftmaxBackward(std::string_view op,
                                       const std::vector<const Type*>& operands,
                                       const AttrMap& attrs) {
  const TensorType& gradOut = tensorOperand(operands, 0, op);
  const TensorType& output = tensorOperand(operands, 1, op);
  expectShape(gradOut, output.shape, op, "grad_output");
  normalizeDim(attrs.getInt("dim"), output.rank(), op);
  return {output.withShape(output.shape).withDType(attrs.getDType("input_dtype"))};
}

// softmax: g * y - y * sum(g * y); log_softmax: g - exp(y) * sum(g).
ReferenceFn softmaxBackwardReference(bool log) {
  return [log](const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
               std::vector<Tensor>& outputs) {
    SoftmaxLines lines(inputs[1]->shape(), attrs.getInt("dim"), "softmax backward");
    Doubles g = inputs[0]->toDoubles(), y = inputs[1]->toDoubles(), result(y.size());
    lines.forEachLine([&](const std::function<int64_t(int64_t)>& index) {
      double sum = 0;
      for (int64_t k = 0; k < lines.size; ++k)
        sum += log ? g[at(index(k))] : g[at(index(k))] * y[at(index(k))];
      for (int64_t k = 0; k < lines.size; ++k) {
        size_t i = at(index(k));
        result[i] = log ? g[i] - std::exp(y[i]) * sum : y[i] * (g[i] - sum);
      }
    });
    store(outputs[0], result);
  };
}

// grad_input = g * y - y * sum(g * y, dim)
std::vector<Value*> decomposeSoftmaxBackward(Node& node, const std::vector<Value*>& operands,
                                             GraphBuilder& b) {
  Value *g = operands[0], *y = operands[1];
  Value* gy = b.op("aten.mul.Tensor", {g, y});
  Value* sum = b.op("aten.sum.dim_IntList", {gy}, keepDims({node.attrs().getDim("dim")}));
  return {b.op("aten.sub.Tensor", {gy, b.op("aten.mul.Tensor", {y, sum})})};
}

// grad_input = g - exp(y) * sum(g, dim), y being log(softmax(x)): a classifier's cross-entropy
// backward, one row kernel with the sum.
std::vector<Value*> decomposeLogSoftmaxBackward(Node& node, const std::vector<Value*>& operands,
                                                GraphBuilder& b) {
  Value *g = operands[0], *y = operands[1];
  Value* sum = b.op("aten.sum.dim_IntList", {g}, keepDims({node.attrs().getDim("dim")}));
  return {b.op("aten.sub.Tensor", {g, b.op("aten.mul.Tensor", {b.op("aten.exp", {y}), sum})})};
}

void registerSoftmaxOps(OpRegistry& registry) {
  for (bool log : {false, true}) {
    std::string name = log ? "aten._log_softmax" : "aten._softmax";
    OpInfo forward = normalizationOp(name, {{"self"}},
                                     {{"dim", std::nullopt}, {"half_to_float", std::nullopt}}, 1,
                                     log ? "log(softmax(self)) along dim, computed stably"
                                         : "softmax along dim: exp(x - max) / sum(exp(x - max))");
    forward.infer = [name](const std::vector<const Type*>& operands, const AttrMap& attrs) {
      return inferSoftmax(name, operands, attrs);
    };
    forward.reference = softmaxReference(log);
    forward.decompose = softmaxDecomposition(log);
    registry.add(std::move(forward));

    std::string backwardName = name + "_backward_data";
    OpInfo backward = normalizationOp(backwardName, {{"grad_output"}, {"output"}},
                                      {{"dim", std::nullopt}, {"input_dtype", std::nullopt}}, 1,
                                      "gradient of " + name + " from its output");
    backward.infer = [backwardName](const std::vector<const Type*>& operands,
                                    const AttrMap& attrs) {
      return inferSoftmaxBackward(backwardName, operands, attrs);
    };
    backward.reference = softmaxBackwardReference(log);
    backward.decompose = inMathDType(log ? decomposeLogSoftmaxBackward : decomposeSoftmaxBackward);
    registry.add(std::move(backward));
  }
}

// _safe_softmax: softmax along dim in dtype (if given), with lines that are -inf throughout
// giving zeros; torch's attention math path emits it for masked scores. Its gradient is
// _softmax_backward_data, so only the forward is needed.
void registerSafeSoftmax(OpRegistry& registry) {
  constexpr std::string_view op = "aten._safe_softmax";
  OpInfo info =
      normalizationOp(std::string(op), {{"self"}}, {{"dim", std::nullopt}, {"dtype", NoneAttr{}}},
                      1, "softmax along dim in dtype; lines of -inf only give zeros");
  info.infer = [op](const std::vector<const Type*>& operands, const AttrMap& attrs) {
    const TensorType& self = tensorOperand(operands, 0, op);
    normalizeDim(attrs.getInt("dim"), self.rank(), op);
    DType result = attrs.getOptionalDType("dtype").value_or(self.dtype);
    if (!isFloating(result))
      throw Error("dtype", std::string(op) + ": needs a floating input or dtype=, got " +
                               std::string(dtypeName(result)));
    return std::vector<Type>{self.withShape(self.shape).withDType(result)};
  };
  info.reference = softmaxReference(false, true);
  // where(all(x == -inf, dim), 0, softmax(x, dim)).
  info.decompose = inMathDType(
      [](Node& node, const std::vector<Value*>& operands, GraphBuilder& b) -> std::vector<Value*> {
        Value* x = operands[0];
        DType math = x->tensorType().dtype;
        const SymExpr dim = node.attrs().getDim("dim");
        AttrMap softmaxAttrs;
        softmaxAttrs.set("dim", dim);
        softmaxAttrs.set("half_to_float", false);
        Value* softmax = b.op("aten._softmax", {x}, std::move(softmaxAttrs));
        AttrMap negInf;
        negInf.set("other", -std::numeric_limits<double>::infinity());
        AttrMap line;
        line.set("dim", dim);
        line.set("keepdim", true);
        Value* masked =
            b.op("aten.all.dim", {b.op("aten.eq.Scalar", {x}, std::move(negInf))}, std::move(line));
        Value* zero = b.scalar(0.0, math, x->tensorType().device);
        return {b.op("aten.where.self", {masked, zero, softmax})};
      });
  registry.add(std::move(info));
}

// ---- layer norm over the trailing normalized_shape dims

struct LayerNormShapes {
  size_t axis;      // first normalized dim
  Shape normalized; // input.shape[axis:]
  Shape statsShape; // input.shape[:axis] + [1] * len(normalized)

  LayerNormShapes(const TensorType& input, const AttrMap& attrs, std::string_view op)
      : normalized(attrs.getDims("normalized_shape")) {
    if (normalized.empty() || normalized.size() > input.rank() ||
        !std::equal(normalized.begin(), normalized.end(),
                    input.shape.end() - static_cast<std::ptrdiff_t>(normalized.size())))
      throw Error("shape", std::string(op) + ": normalized_shape [" + shapeStr(normalized) +
                               "] must be a non-empty suffix of the input shape [" +
                               shapeStr(input.shape) + "]");
    axis = input.rank() - normalized.size();
    statsShape.assign(input.shape.begin(), input.shape.begin() + static_cast<std::ptrdiff_t>(axis));
    statsShape.resize(input.rank(), 1);
  }

  void checkAffine(const std::vector<const Type*>& operands, size_t weightIndex,
                   std::string_view op) const {
    for (size_t i : {weightIndex, weightIndex + 1})
      if (i < operands.size() && operands[i])
        expectShape(tensorOperand(operands, i, op), normalized, op,
                    i == weightIndex ? "weight" : "bias");
  }
};

// Rows of a [M, N] view of the input: N elements normalized together.
struct Rows {
  int64_t count, width;
  Rows(const Tensor& input, const AttrMap& attrs) {
    width = 1;
    for (int64_t d : attrs.getInts("normalized_shape"))
      width *= d;
    count = width == 0 ? 0 : input.numel() / width;
  }
};

Doubles optionalDoubles(const std::vector<const Tensor*>& inputs, size_t i, size_t size,
                        double fallback) {
  return i < inputs.size() && inputs[i] ? inputs[i]->toDoubles() : Doubles(size, fallback);
}

std::vector<Type> inferLayerNorm(const std::vector<const Type*>& operands, const AttrMap& attrs) {
  const std::string_view op = "aten.native_layer_norm";
  const TensorType& input = tensorOperand(operands, 0, op);
  LayerNormShapes shapes(input, attrs, op);
  shapes.checkAffine(operands, 1, op);
  TensorType stats = input.withShape(shapes.statsShape).withDType(statsDType(input));
  return {input.withShape(input.shape), stats, stats};
}

void layerNormReference(const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
                        std::vector<Tensor>& outputs) {
  Rows rows(*inputs[0], attrs);
  double eps = attrs.getFloat("eps");
  Doubles x = inputs[0]->toDoubles(), out(x.size()), means, rstds;
  Doubles w = optionalDoubles(inputs, 1, at(rows.width), 1.0);
  Doubles b = optionalDoubles(inputs, 2, at(rows.width), 0.0);
  for (int64_t r = 0; r < rows.count; ++r) {
    const double* row = &x[at(r * rows.width)];
    double mean = 0, var = 0;
    for (int64_t j = 0; j < rows.width; ++j)
      mean += row[j];
    mean /= static_cast<double>(rows.width);
    for (int64_t j = 0; j < rows.width; ++j)
      var += (row[j] - mean) * (row[j] - mean);
    double rstd = 1.0 / std::sqrt(var / static_cast<double>(rows.width) + eps);
    for (int64_t j = 0; j < rows.width; ++j)
      out[at(r * rows.width + j)] = (row[j] - mean) * rstd * w[at(j)] + b[at(j)];
    means.push_back(mean);
    rstds.push_back(rstd);
  }
  store(outputs[0], out);
  store(outputs[1], means);
  store(outputs[2], rstds);
}

// (x - mean) * rsqrt(var + eps) * weight + bias, with var_mean(correction=0) over the
// normalized dims.
// The normalized (trailing) dims of layer norm's input, and the leading ones.
struct LayerNormDims {
  IntList normalized, leading;
  LayerNormDims(const Node& node, const Value* input) {
    size_t rank = input->tensorType().rank();
    size_t first = rank - node.attrs().getDims("normalized_shape").size();
    for (size_t d = 0; d < rank; ++d)
      (d < first ? leading : normalized).push_back(static_cast<int64_t>(d));
  }
};

std::vector<Value*> decomposeLayerNorm(Node& node, const std::vector<Value*>& operands,
                                       GraphBuilder& b) {
  Value *x = operands[0], *weight = operands[1], *bias = operands[2];
  AttrMap varMeanAttrs = keepDims(LayerNormDims(node, x).normalized);
  varMeanAttrs.set("correction", SymExpr(0));
  std::vector<Value*> varMean = b.opResults("aten.var_mean.correction", {x}, varMeanAttrs);
  AttrMap epsAttrs;
  epsAttrs.set("other", node.attrs().getFloat("eps"));
  Value* rstd = b.op("aten.rsqrt", {b.op("aten.add.Scalar", {varMean[0]}, epsAttrs)});
  Value* out = b.op("aten.mul.Tensor", {b.op("aten.sub.Tensor", {x, varMean[1]}), rstd});
  if (weight) out = b.op("aten.mul.Tensor", {out, weight});
  if (bias) out = b.op("aten.add.Tensor", {out, bias});
  return {out, varMean[1], rstd};
}

// With xhat = (x - mean) * rstd and gw = grad_out * weight (torch's
// native_layer_norm_backward decomposition, with means in place of sums over N):
//   grad_input  = rstd * (gw - mean(gw) - xhat * mean(gw * xhat))   over the normalized dims
//   grad_weight = sum(grad_out * xhat), grad_bias = sum(grad_out)    over the leading dims
// The row means fuse into one row kernel with grad_input; the column sums are reductions of
// their own. A result output_mask leaves out is zeros (nothing uses it: it is removed).
std::vector<Value*> decomposeLayerNormBackward(Node& node, const std::vector<Value*>& operands,
                                               GraphBuilder& b) {
  Value *g = operands[0], *x = operands[1], *mean = operands[2], *rstd = operands[3];
  Value* weight = operands[4];
  LayerNormDims dims(node, x);
  BoolList mask = node.attrs().getBools("output_mask");
  auto zerosLike = [&](Value* like) { return b.op("aten.zeros_like", {like}); };
  // A sum over the leading dims, to the normalized shape (none: the value itself).
  auto columnSum = [&](Value* value) {
    if (dims.leading.empty()) return value;
    AttrMap attrs;
    attrs.set("dim", dims.leading);
    attrs.set("keepdim", false);
    return b.op("aten.sum.dim_IntList", {value}, std::move(attrs));
  };
  Value* xhat = b.op("aten.mul.Tensor", {b.op("aten.sub.Tensor", {x, mean}), rstd});

  Value* gradInput;
  if (mask[0]) {
    Value* gw = weight ? b.op("aten.mul.Tensor", {g, weight}) : g;
    AttrMap rowMean = keepDims(dims.normalized);
    Value* meanGw = b.op("aten.mean.dim", {gw}, rowMean);
    Value* meanGwXhat = b.op("aten.mean.dim", {b.op("aten.mul.Tensor", {gw, xhat})}, rowMean);
    Value* centred = b.op("aten.sub.Tensor", {b.op("aten.sub.Tensor", {gw, meanGw}),
                                              b.op("aten.mul.Tensor", {xhat, meanGwXhat})});
    gradInput = b.op("aten.mul.Tensor", {rstd, centred});
  } else {
    gradInput = zerosLike(x);
  }
  Value* gradWeight = columnSum(b.op("aten.mul.Tensor", {g, xhat}));
  if (!mask[1]) gradWeight = zerosLike(gradWeight);
  Value* gradBias = columnSum(g);
  if (!mask[2]) gradBias = zerosLike(gradBias);
  return {gradInput, gradWeight, gradBias};
}

std::vector<Type> inferLayerNormBackward(const std::vector<const Type*>& operands,
                                         const AttrMap& attrs) {
  const std::string_view op = "aten.native_layer_norm_backward";
  const TensorType& gradOut = tensorOperand(operands, 0, op);
  const TensorType& input = tensorOperand(operands, 1, op);
  expectShape(gradOut, input.shape, op, "grad_out");
  LayerNormShapes shapes(input, attrs, op);
  expectShape(tensorOperand(operands, 2, op), shapes.statsShape, op, "mean");
  expectShape(tensorOperand(operands, 3, op), shapes.statsShape, op, "rstd");
  shapes.checkAffine(operands, 4, op);
  if (attrs.getBools("output_mask").size() != 3)
    throw Error("shape", std::string(op) + ": output_mask needs 3 values");
  auto affineType = [&](size_t i) {
    DType d = i < operands.size() && operands[i] ? operands[i]->tensor().dtype : input.dtype;
    return input.withShape(shapes.normalized).withDType(d);
  };
  return {input.withShape(input.shape), affineType(4), affineType(5)};
}

void layerNormBackwardReference(const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
                                std::vector<Tensor>& outputs) {
  Rows rows(*inputs[1], attrs);
  BoolList mask = attrs.getBools("output_mask");
  Doubles g = inputs[0]->toDoubles(), x = inputs[1]->toDoubles();
  Doubles mean = inputs[2]->toDoubles(), rstd = inputs[3]->toDoubles();
  Doubles w = optionalDoubles(inputs, 4, at(rows.width), 1.0);
  Doubles gradIn(x.size(), 0.0), gradW(at(rows.width), 0.0), gradB(at(rows.width), 0.0);
  auto n = static_cast<double>(rows.width);
  for (int64_t r = 0; r < rows.count; ++r) {
    auto xhat = [&](int64_t j) { return (x[at(r * rows.width + j)] - mean[at(r)]) * rstd[at(r)]; };
    auto gxhat = [&](int64_t j) { return g[at(r * rows.width + j)] * w[at(j)]; };
    double sumG = 0, sumGX = 0;
    for (int64_t j = 0; j < rows.width; ++j) {
      sumG += gxhat(j);
      sumGX += gxhat(j) * xhat(j);
      gradW[at(j)] += g[at(r * rows.width + j)] * xhat(j);
      gradB[at(j)] += g[at(r * rows.width + j)];
    }
    for (int64_t j = 0; j < rows.width; ++j)
      gradIn[at(r * rows.width + j)] = rstd[at(r)] / n * (n * gxhat(j) - sumG - xhat(j) * sumGX);
  }
  storeMasked(outputs, mask, {gradIn, gradW, gradB});
}

void registerLayerNormOps(OpRegistry& registry) {
  OpInfo forward =
      normalizationOp("aten.native_layer_norm", {{"input"}, {"weight", true}, {"bias", true}},
                      {{"normalized_shape", std::nullopt}, {"eps", std::nullopt}}, 3,
                      "layer norm over the trailing normalized_shape dims: (out, mean, rstd)");
  forward.infer = inferLayerNorm;
  forward.reference = layerNormReference;
  forward.decompose = inMathDType(decomposeLayerNorm);
  registry.add(std::move(forward));

  OpInfo backward = normalizationOp(
      "aten.native_layer_norm_backward",
      {{"grad_out"}, {"input"}, {"mean"}, {"rstd"}, {"weight", true}, {"bias", true}},
      {{"normalized_shape", std::nullopt}, {"output_mask", std::nullopt}}, 3,
      "gradients of layer norm: (grad_input, grad_weight, grad_bias); masked-off ones are zeros");
  backward.infer = inferLayerNormBackward;
  backward.reference = layerNormBackwardReference;
  backward.decompose = inMathDType(decomposeLayerNormBackward);
  registry.add(std::move(backward));
}

// ---- batch norm over every dim but the channel dim 1

// The operand layout of one batch norm forward op.
struct BatchNormForm {
  std::string name;
  bool hasTrainingAttr;      // otherwise always inference
  bool functional;           // also returns the updated running stats
  bool statsOptional;        // running_mean/var may be none
  bool statsOperands = true; // false: the op has no running_mean/var operands at all
};

SymExpr channels(const TensorType& input, std::string_view op) {
  if (input.rank() < 2)
    throw Error("shape", std::string(op) + ": input must have a channel dim 1, got [" +
                             shapeStr(input.shape) + "]");
  return input.shape[1];
}

// Checks that operands [first, last] that are present are per-channel vectors.
void checkPerChannel(const std::vector<const Type*>& operands, size_t first, size_t last,
                     const SymExpr& c, std::string_view op) {
  for (size_t i = first; i <= last && i < operands.size(); ++i)
    if (operands[i])
      expectShape(tensorOperand(operands, i, op), {c}, op,
                  ("per-channel operand " + std::to_string(i)).c_str());
}

// Planes of an [N, C, spatial...] tensor: element i belongs to channel (i / spatial) % C.
struct ChannelLayout {
  int64_t channels, spatial, count; // count: elements per channel
  explicit ChannelLayout(const Tensor& input) {
    channels = input.size(1);
    spatial = 1;
    for (size_t d = 2; d < input.rank(); ++d)
      spatial *= input.size(d);
    count = channels == 0 ? 0 : input.numel() / channels;
  }
  int64_t channelOf(int64_t i) const { return i / spatial % channels; }
};

InferFn batchNormInfer(const BatchNormForm& form) {
  return [form](const std::vector<const Type*>& operands, const AttrMap& attrs) {
    const TensorType& input = tensorOperand(operands, 0, form.name);
    SymExpr c = channels(input, form.name);
    checkPerChannel(operands, 1, 4, c, form.name);
    bool hasStats = operands.size() > 4 && operands[3] && operands[4];
    if (!form.statsOptional && !hasStats)
      throw Error("shape", form.name + ": running_mean and running_var are required");
    bool training = form.hasTrainingAttr && attrs.getBool("training");
    if (!training && !hasStats)
      throw Error("shape", form.name + ": inference needs running_mean and running_var");
    bool savesStats = training || input.device.kind == Device::Kind::CUDA;
    TensorType saved = input.withShape({savesStats ? c : SymExpr(0)}).withDType(statsDType(input));
    std::vector<Type> results = {input.withShape(input.shape), saved, saved};
    // The functional form's new running statistics: torch computes them in the accumulation
    // dtype (f32 for a bf16 or f16 input) with the old ones, so they come out promoted (f32
    // for bf16 buffers too); the caller copies them back into its buffers.
    if (form.functional)
      for (size_t i : {3, 4}) {
        const TensorType& running = operands[i]->tensor();
        results.push_back(
            running.withDType(promoteTypes(accumulationDType(input.dtype), running.dtype)));
      }
    return results;
  };
}

ReferenceFn batchNormReference(const BatchNormForm& form) {
  return [form](const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
                std::vector<Tensor>& outputs) {
    ChannelLayout layout(*inputs[0]);
    auto c = at(layout.channels);
    bool training = form.hasTrainingAttr && attrs.getBool("training");
    double eps = attrs.getFloat("eps"), momentum = attrs.getFloat("momentum");
    bool hasStats = inputs.size() > 4 && inputs[3] && inputs[4];
    Doubles x = inputs[0]->toDoubles(), w = optionalDoubles(inputs, 1, c, 1.0),
            b = optionalDoubles(inputs, 2, c, 0.0), runMean = optionalDoubles(inputs, 3, c, 0.0),
            runVar = optionalDoubles(inputs, 4, c, 1.0);
    Doubles mean(c, 0.0), var(c, 0.0), rstd(c);
    if (training) {
      for (size_t i = 0; i < x.size(); ++i)
        mean[at(layout.channelOf(static_cast<int64_t>(i)))] += x[i];
      for (double& m : mean)
        m /= static_cast<double>(layout.count);
      for (size_t i = 0; i < x.size(); ++i) {
        size_t ch = at(layout.channelOf(static_cast<int64_t>(i)));
        var[ch] += (x[i] - mean[ch]) * (x[i] - mean[ch]);
      }
      for (double& v : var)
        v /= static_cast<double>(layout.count);
    } else {
      mean = runMean;
      var = runVar;
    }
    for (size_t ch = 0; ch < c; ++ch)
      rstd[ch] = 1.0 / std::sqrt(var[ch] + eps);
    Doubles out(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      size_t ch = at(layout.channelOf(static_cast<int64_t>(i)));
      out[i] = (x[i] - mean[ch]) * rstd[ch] * w[ch] + b[ch];
    }
    store(outputs[0], out);
    if (outputs[1].numel() > 0) {
      store(outputs[1], mean);
      store(outputs[2], rstd);
    }
    if (!form.functional) return;
    Doubles newMean = runMean, newVar = runVar;
    if (training && hasStats) {
      auto n = static_cast<double>(layout.count);
      for (size_t ch = 0; ch < c; ++ch) {
        newMean[ch] = momentum * mean[ch] + (1 - momentum) * runMean[ch];
        newVar[ch] = momentum * var[ch] * n / (n - 1) + (1 - momentum) * runVar[ch];
      }
    }
    store(outputs[3], newMean);
    store(outputs[4], newVar);
  };
}

// Batch norm in inference, with the running statistics: an elementwise op per channel,
//   out = (x - running_mean) * (rsqrt(running_var + eps) * weight) + bias,
// the per-channel values seen as [C, 1, ...] against x's [N, C, ...]. Decomposed, it fuses with
// its neighbours (the ReLU after it) where its kernel was a pass over x of its own. save_mean
// and save_rstd (empty on the CPU) must be unused, else it declines and the op stays whole; the
// running statistics stand in for them (nothing reads them).
std::vector<Value*> decomposeBatchNormInference(Node& node, const std::vector<Value*>& operands,
                                                GraphBuilder& b) {
  if (node.result(1)->hasUses() || node.result(2)->hasUses()) return {};
  Value *x = operands[0], *weight = operands[1], *bias = operands[2];
  Value *mean = operands[3], *var = operands[4];
  const TensorType& input = x->tensorType();
  auto perChannel = [&](Value* value) {
    if (input.rank() <= 2) return value; // [N, C]: [C] broadcasts as it is
    Shape shape(input.rank() - 1, SymExpr(1));
    shape[0] = input.shape[1];
    AttrMap size;
    size.set("size", shape);
    return b.op("aten.view", {value}, std::move(size));
  };
  AttrMap epsAttrs;
  epsAttrs.set("other", node.attrs().getFloat("eps"));
  Value* scale = b.op("aten.rsqrt", {b.op("aten.add.Scalar", {var}, epsAttrs)});
  if (weight) scale = b.op("aten.mul.Tensor", {scale, weight});
  Value* out =
      b.op("aten.mul.Tensor", {b.op("aten.sub.Tensor", {x, perChannel(mean)}), perChannel(scale)});
  if (bias) out = b.op("aten.add.Tensor", {out, perChannel(bias)});
  return {out, mean, var};
}

std::vector<Type> inferBatchNormBackward(const std::vector<const Type*>& operands,
                                         const AttrMap& attrs) {
  const std::string_view op = "aten.native_batch_norm_backward";
  const TensorType& gradOut = tensorOperand(operands, 0, op);
  const TensorType& input = tensorOperand(operands, 1, op);
  expectShape(gradOut, input.shape, op, "grad_out");
  SymExpr c = channels(input, op);
  bool train = attrs.getBool("train");
  // In inference torch passes the empty save_mean/save_invstd of
  // _native_batch_norm_legit_no_training: they are unused, so their shape is not checked.
  checkPerChannel(operands, 2, train ? 6 : 4, c, op);
  auto present = [&](size_t i) { return i < operands.size() && operands[i] != nullptr; };
  if (train ? !(present(5) && present(6)) : !(present(3) && present(4)))
    throw Error("shape",
                std::string(op) + (train ? ": training needs save_mean and save_invstd"
                                         : ": inference needs running_mean and running_var"));
  if (attrs.getBools("output_mask").size() != 3)
    throw Error("shape", std::string(op) + ": output_mask needs 3 values");
  TensorType perChannel =
      input.withShape({c}).withDType(present(2) ? operands[2]->tensor().dtype : input.dtype);
  return {input.withShape(input.shape), perChannel, perChannel};
}

void batchNormBackwardReference(const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
                                std::vector<Tensor>& outputs) {
  ChannelLayout layout(*inputs[1]);
  auto c = at(layout.channels);
  bool train = attrs.getBool("train");
  BoolList mask = attrs.getBools("output_mask");
  Doubles g = inputs[0]->toDoubles(), x = inputs[1]->toDoubles(),
          w = optionalDoubles(inputs, 2, c, 1.0);
  Doubles mean, invstd(c);
  if (train) {
    mean = inputs[5]->toDoubles();
    invstd = inputs[6]->toDoubles();
  } else {
    mean = inputs[3]->toDoubles();
    Doubles var = inputs[4]->toDoubles();
    for (size_t ch = 0; ch < c; ++ch)
      invstd[ch] = 1.0 / std::sqrt(var[ch] + attrs.getFloat("eps"));
  }
  Doubles sumG(c, 0.0), dot(c, 0.0);
  for (size_t i = 0; i < x.size(); ++i) {
    size_t ch = at(layout.channelOf(static_cast<int64_t>(i)));
    sumG[ch] += g[i];
    dot[ch] += g[i] * (x[i] - mean[ch]);
  }
  auto n = static_cast<double>(layout.count);
  Doubles gradIn(x.size()), gradW(c), gradB = sumG;
  for (size_t i = 0; i < x.size(); ++i) {
    size_t ch = at(layout.channelOf(static_cast<int64_t>(i)));
    double scale = invstd[ch] * w[ch];
    // In training the mean and variance depend on x too: project out their gradients.
    gradIn[i] =
        train ? (g[i] - (x[i] - mean[ch]) * dot[ch] / n * invstd[ch] * invstd[ch] - sumG[ch] / n) *
                    scale
              : g[i] * scale;
  }
  for (size_t ch = 0; ch < c; ++ch)
    gradW[ch] = dot[ch] * invstd[ch];
  storeMasked(outputs, mask, {gradIn, gradW, gradB});
}

void registerBatchNormOps(OpRegistry& registry) {
  const std::vector<BatchNormForm> forms = {
      {"aten._native_batch_norm_legit_functional", true, true, false},
      {"aten._native_batch_norm_legit_no_training", false, false, false},
      {"aten.native_batch_norm", true, false, true},
      // Batch norm without running statistics: instance norm (decomposed by torch into this
      // over [1, N*C, ...]) and BatchNorm with track_running_stats=False. Its operands are
      // input, weight and bias only.
      {"aten._native_batch_norm_legit.no_stats", true, false, true, false},
  };
  for (const BatchNormForm& form : forms) {
    std::vector<AttrSpec> attrs = {{"momentum", std::nullopt}, {"eps", std::nullopt}};
    if (form.hasTrainingAttr) attrs.insert(attrs.begin(), AttrSpec{"training", std::nullopt});
    std::vector<OperandSpec> operands = {{"input"}, {"weight", true}, {"bias", true}};
    if (form.statsOperands) {
      operands.push_back({"running_mean", form.statsOptional});
      operands.push_back({"running_var", form.statsOptional});
    }
    OpInfo info = normalizationOp(
        form.name, std::move(operands), attrs, form.functional ? 5 : 3,
        form.functional ? "batch norm returning (out, save_mean, save_rstd, new_running_mean, "
                          "new_running_var)"
                        : "batch norm returning (out, save_mean, save_rstd)");
    info.infer = batchNormInfer(form);
    info.reference = batchNormReference(form);
    if (!form.hasTrainingAttr) info.decompose = inMathDType(decomposeBatchNormInference);
    registry.add(std::move(info));
  }

  OpInfo backward = normalizationOp(
      "aten.native_batch_norm_backward",
      {{"grad_out"},
       {"input"},
       {"weight", true},
       {"running_mean", true},
       {"running_var", true},
       {"save_mean", true},
       {"save_invstd", true}},
      {{"train", std::nullopt}, {"eps", std::nullopt}, {"output_mask", std::nullopt}}, 3,
      "gradients of batch norm: (grad_input, grad_weight, grad_bias); masked-off ones are zeros");
  backward.infer = inferBatchNormBackward;
  backward.reference = batchNormBackwardReference;
  registry.add(std::move(backward));
}

} // namespace

void registerNormalizationOps(OpRegistry& registry) {
  registerSoftmaxOps(registry);
  registerSafeSoftmax(registry);
  registerLayerNormOps(registry);
  registerBatchNormOps(registry);
}

} // namespace loupe
