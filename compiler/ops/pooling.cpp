// Pooling over the last two dims of [N, C, H, W] or unbatched [C, H, W] tensors: max pooling
// (with torch's indices: the flat h * W + w position inside each H x W plane), average pooling
// and adaptive average pooling, and their backward ops.
//
// Output sizes follow torch's pooling_output_shape: (H + 2p - d(k-1) - 1) // s + 1, or with
// ceil_mode the ceiling of that division, minus one when the last window would start inside
// the right padding. For a symbolic H that correction is only decidable when every window
// overlaps the input (stride <= d(k-1) + 1 - p); other symbolic ceil_mode cases are rejected.
#include <array>
#include <cmath>
#include <functional>
#include <limits>

#include "compiler/ir/error.h"
#include "compiler/ops/op_registry.h"
#include "compiler/ops/pointwise.h"
#include "compiler/ops/pool_windows.h"

namespace loupe {
namespace {

using Pair = std::array<int64_t, 2>;

// torch accepts one value for both spatial dims ([3] means [3, 3]); empty means `fallback`.
Pair pairAttr(const AttrMap& attrs, std::string_view name, Pair fallback) {
  if (attrs.isNone(name)) return fallback;
  std::vector<int64_t> values = attrs.getInts(name);
  if (values.empty()) return fallback;
  if (values.size() == 1) return {values[0], values[0]};
  if (values.size() == 2) return {values[0], values[1]};
  throw Error("attribute", "attribute '" + std::string(name) + "' needs 1 or 2 values, found " +
                               std::to_string(values.size()));
}

struct PoolWindow {
  Pair kernel, stride, padding, dilation;
  bool ceilMode = false;

  static PoolWindow fromAttrs(const AttrMap& attrs, const std::string& op) {
    PoolWindow w;
    w.kernel = pairAttr(attrs, "kernel_size", {0, 0});
    w.stride = pairAttr(attrs, "stride", w.kernel);
    w.padding = pairAttr(attrs, "padding", {0, 0});
    w.dilation = pairAttr(attrs, "dilation", {1, 1});
    w.ceilMode = attrs.getBool("ceil_mode", false);
    for (int i = 0; i < 2; ++i) {
      if (w.kernel[i] <= 0 || w.stride[i] <= 0 || w.dilation[i] <= 0)
        throw Error("shape", op + ": kernel_size, stride and dilation must be positive");
      int64_t effective = w.dilation[i] * (w.kernel[i] - 1) + 1;
      if (w.padding[i] < 0 || w.padding[i] > effective / 2)
        throw Error("shape", op + ": padding " + std::to_string(w.padding[i]) +
                                 " must be between 0 and half the kernel extent " +
                                 std::to_string(effective));
    }
    return w;
  }

  SymExpr outputSize(const SymExpr& in, int i, const std::string& op) const {
    int64_t k = kernel[i], s = stride[i], p = padding[i], d = dilation[i];
    SymExpr span = in + 2 * p - d * (k - 1) - 1;
    if (!ceilMode) return SymExpr::floorDiv(span, s) + 1;
    SymExpr out = SymExpr::floorDiv(span + (s - 1), s) + 1;
    if (auto h = in.constant()) {
      int64_t o = *out.constant();
      return (o - 1) * s >= *h + p ? o - 1 : o;
    }
    if (d * (k - 1) + 1 - p >= s) return out;
    throw Error("shape", op + ": ceil_mode output size for symbolic size " + in.str() +
                             " with stride " + std::to_string(s) +
                             " larger than the padded kernel extent is not supported");
  }
};

// The last two dims of an [N, C, H, W] or [C, H, W] tensor.
const TensorType& spatialInput(const std::vector<const Type*>& operands, size_t i,
                               const std::string& op, const char* what) {
  const TensorType& t = tensorOperand(operands, i, op);
  if (t.rank() != 3 && t.rank() != 4)
    throw Error("shape", op + ": " + what + " must be 3-D (C, H, W) or 4-D (N, C, H, W), got [" +
                             shapeStr(t.shape) + "]");
  return t;
}

Shape withSpatial(const Shape& shape, const SymExpr& h, const SymExpr& w) {
  Shape out = shape;
  out[out.size() - 2] = h;
  out[out.size() - 1] = w;
  return out;
}

void expectShape(const TensorType& actual, const Shape& expected, const std::string& op,
                 const char* what) {
  if (actual.shape != expected)
    throw Error("shape", op + ": " + what + " has shape [" + shapeStr(actual.shape) +
                             "], expected [" + shapeStr(expected) + "]");
}

Shape pooledShape(const TensorType& input, const PoolWindow& w, const std::string& op) {
  const Shape& s = input.shape;
  return withSpatial(s, w.outputSize(s[s.size() - 2], 0, op), w.outputSize(s[s.size() - 1], 1, op));
}

// Planes (all leading dims flattened) and the in/out spatial sizes of a pooling op.
struct PlaneGeometry {
  int64_t planes, inH, inW, outH, outW;

  PlaneGeometry(const Tensor& input, const Tensor& output) {
    size_t r = input.rank();
    inH = input.size(r - 2);
    inW = input.size(r - 1);
    outH = output.size(r - 2);
    outW = output.size(r - 1);
    planes = inH * inW == 0 ? 0 : input.numel() / (inH * inW);
  }

  // visit(inPlaneOffset, outFlatIndex, oh, ow) for every output element.
  void forEachOutput(const std::function<void(int64_t, int64_t, int64_t, int64_t)>& visit) const {
    for (int64_t p = 0; p < planes; ++p)
      for (int64_t oh = 0; oh < outH; ++oh)
        for (int64_t ow = 0; ow < outW; ++ow)
          visit(p * inH * inW, (p * outH + oh) * outW + ow, oh, ow);
  }
};

void store(Tensor& out, const std::vector<double>& values) {
  for (int64_t i = 0; i < out.numel(); ++i)
    out.set(i, values[static_cast<size_t>(i)]);
}

// ---- max pooling

std::vector<Type> inferMaxPool(const std::vector<const Type*>& operands, const AttrMap& attrs) {
  const std::string op = "aten.max_pool2d_with_indices";
  const TensorType& input = spatialInput(operands, 0, op, "self");
  TensorType out = input.withShape(pooledShape(input, PoolWindow::fromAttrs(attrs, op), op));
  return {out, out.withDType(DType::I64)};
}

void maxPoolReference(const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
                      std::vector<Tensor>& outputs) {
  PoolWindow w = PoolWindow::fromAttrs(attrs, "aten.max_pool2d_with_indices");
  PlaneGeometry g(*inputs[0], outputs[0]);
  std::vector<double> x = inputs[0]->toDoubles();
  g.forEachOutput([&](int64_t plane, int64_t o, int64_t oh, int64_t ow) {
    double best = -std::numeric_limits<double>::infinity();
    int64_t bestIndex = -1;
    for (int64_t kh = 0; kh < w.kernel[0]; ++kh) {
      int64_t ih = oh * w.stride[0] - w.padding[0] + kh * w.dilation[0];
      if (ih < 0 || ih >= g.inH) continue;
      for (int64_t kw = 0; kw < w.kernel[1]; ++kw) {
        int64_t iw = ow * w.stride[1] - w.padding[1] + kw * w.dilation[1];
        if (iw < 0 || iw >= g.inW) continue;
        // torch keeps the first maximum and lets NaN win, so NaN propagates.
        double v = x[static_cast<size_t>(plane + ih * g.inW + iw)];
        if (bestIndex < 0 || v > best || std::isnan(v)) {
          best = v;
          bestIndex = ih * g.inW + iw;
        }
      }
    }
    outputs[0].set(o, best);
    outputs[1].set(o, static_cast<double>(bestIndex));
  });
}

std::vector<Type> inferMaxPoolBackward(const std::vector<const Type*>& operands,
                                       const AttrMap& attrs) {
  const std::string op = "aten.max_pool2d_with_indices_backward";
  const TensorType& input = spatialInput(operands, 1, op, "self");
  Shape pooled = pooledShape(input, PoolWindow::fromAttrs(attrs, op), op);
  expectShape(spatialInput(operands, 0, op, "grad_output"), pooled, op, "grad_output");
  expectShape(spatialInput(operands, 2, op, "indices"), pooled, op, "indices");
  return {input};
}

// Each output's gradient goes to the input position its index names.
void maxPoolBackwardReference(const std::vector<const Tensor*>& inputs, const AttrMap&,
                              std::vector<Tensor>& outputs) {
  PlaneGeometry g(*inputs[1], *inputs[0]);
  std::vector<double> gradOut = inputs[0]->toDoubles(), indices = inputs[2]->toDoubles();
  std::vector<double> gradIn(static_cast<size_t>(outputs[0].numel()), 0.0);
  g.forEachOutput([&](int64_t plane, int64_t o, int64_t, int64_t) {
    auto index = static_cast<int64_t>(indices[static_cast<size_t>(o)]);
    gradIn[static_cast<size_t>(plane + index)] += gradOut[static_cast<size_t>(o)];
  });
  store(outputs[0], gradIn);
}

// ---- average pooling

struct AvgPoolOptions {
  PoolWindow window;
  bool countIncludePad;
  std::optional<int64_t> divisorOverride;

  static AvgPoolOptions fromAttrs(const AttrMap& attrs, const std::string& op) {
    AvgPoolOptions o{PoolWindow::fromAttrs(attrs, op), attrs.getBool("count_include_pad", true),
                     std::nullopt};
    if (!attrs.isNone("divisor_override")) {
      o.divisorOverride = attrs.getInt("divisor_override");
      if (*o.divisorOverride == 0) throw Error("shape", op + ": divisor_override must not be 0");
    }
    return o;
  }

  // The in-bounds window of one output and the divisor torch averages it with.
  struct Window {
    int64_t h0, h1, w0, w1;
    double divisor;
  };
  Window window2d(int64_t oh, int64_t ow, const PlaneGeometry& g) const {
    const PoolWindow& w = window;
    AverageWindow h = averageWindow(oh, w.kernel[0], w.stride[0], w.padding[0], g.inH);
    AverageWindow v = averageWindow(ow, w.kernel[1], w.stride[1], w.padding[1], g.inW);
    return {h.first, h.last, v.first, v.last,
            static_cast<double>(averageDivisor(h, v, countIncludePad, divisorOverride))};
  }
};

std::vector<Type> inferAvgPool(const std::vector<const Type*>& operands, const AttrMap& attrs) {
  const std::string op = "aten.avg_pool2d";
  const TensorType& input = spatialInput(operands, 0, op, "self");
  return {input.withShape(pooledShape(input, AvgPoolOptions::fromAttrs(attrs, op).window, op))};
}

void avgPoolReference(const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
                      std::vector<Tensor>& outputs) {
  AvgPoolOptions options = AvgPoolOptions::fromAttrs(attrs, "aten.avg_pool2d");
  PlaneGeometry g(*inputs[0], outputs[0]);
  std::vector<double> x = inputs[0]->toDoubles();
  g.forEachOutput([&](int64_t plane, int64_t o, int64_t oh, int64_t ow) {
    auto win = options.window2d(oh, ow, g);
    double sum = 0;
    for (int64_t ih = win.h0; ih < win.h1; ++ih)
      for (int64_t iw = win.w0; iw < win.w1; ++iw)
        sum += x[static_cast<size_t>(plane + ih * g.inW + iw)];
    // A window lying entirely in the padding averages nothing: torch writes 0.
    outputs[0].set(o, win.h0 < win.h1 && win.w0 < win.w1 ? sum / win.divisor : 0.0);
  });
}

std::vector<Type> inferAvgPoolBackward(const std::vector<const Type*>& operands,
                                       const AttrMap& attrs) {
  const std::string op = "aten.avg_pool2d_backward";
  const TensorType& input = spatialInput(operands, 1, op, "self");
  Shape pooled = pooledShape(input, AvgPoolOptions::fromAttrs(attrs, op).window, op);
  expectShape(spatialInput(operands, 0, op, "grad_output"), pooled, op, "grad_output");
  return {input};
}

void avgPoolBackwardReference(const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
                              std::vector<Tensor>& outputs) {
  AvgPoolOptions options = AvgPoolOptions::fromAttrs(attrs, "aten.avg_pool2d_backward");
  PlaneGeometry g(*inputs[1], *inputs[0]);
  std::vector<double> gradOut = inputs[0]->toDoubles();
  std::vector<double> gradIn(static_cast<size_t>(outputs[0].numel()), 0.0);
  g.forEachOutput([&](int64_t plane, int64_t o, int64_t oh, int64_t ow) {
    auto win = options.window2d(oh, ow, g);
    for (int64_t ih = win.h0; ih < win.h1; ++ih)
      for (int64_t iw = win.w0; iw < win.w1; ++iw)
        gradIn[static_cast<size_t>(plane + ih * g.inW + iw)] +=
            gradOut[static_cast<size_t>(o)] / win.divisor;
  });
  store(outputs[0], gradIn);
}

// ---- adaptive average pooling: output cell o of n covers [floor(o*in/n), ceil((o+1)*in/n)).

template <typename Visit>
void forEachAdaptiveCell(const PlaneGeometry& g, Visit visit) {
  g.forEachOutput([&](int64_t plane, int64_t o, int64_t oh, int64_t ow) {
    auto [h0, h1] = adaptiveCell(oh, g.inH, g.outH);
    auto [w0, w1] = adaptiveCell(ow, g.inW, g.outW);
    double area = static_cast<double>((h1 - h0) * (w1 - w0));
    for (int64_t ih = h0; ih < h1; ++ih)
      for (int64_t iw = w0; iw < w1; ++iw)
        visit(plane + ih * g.inW + iw, o, area);
  });
}

std::vector<Type> inferAdaptiveAvgPool(const std::vector<const Type*>& operands,
                                       const AttrMap& attrs) {
  const std::string op = "aten._adaptive_avg_pool2d";
  const TensorType& input = spatialInput(operands, 0, op, "self");
  const IntList& size = attrs.getDims("output_size");
  if (size.size() != 2)
    throw Error("shape", op + ": output_size needs 2 values, found " + std::to_string(size.size()));
  for (const SymExpr& s : size)
    if (auto c = s.constant(); c && *c <= 0)
      throw Error("shape", op + ": output_size must be positive, found " + s.str());
  return {input.withShape(withSpatial(input.shape, size[0], size[1]))};
}

void adaptiveAvgPoolReference(const std::vector<const Tensor*>& inputs, const AttrMap&,
                              std::vector<Tensor>& outputs) {
  PlaneGeometry g(*inputs[0], outputs[0]);
  std::vector<double> x = inputs[0]->toDoubles();
  std::vector<double> out(static_cast<size_t>(outputs[0].numel()), 0.0);
  forEachAdaptiveCell(g, [&](int64_t in, int64_t o, double area) {
    out[static_cast<size_t>(o)] += x[static_cast<size_t>(in)] / area;
  });
  store(outputs[0], out);
}

std::vector<Type> inferAdaptiveAvgPoolBackward(const std::vector<const Type*>& operands,
                                               const AttrMap&) {
  const std::string op = "aten._adaptive_avg_pool2d_backward";
  const TensorType& gradOut = spatialInput(operands, 0, op, "grad_output");
  const TensorType& input = spatialInput(operands, 1, op, "self");
  const Shape& g = gradOut.shape;
  expectShape(gradOut, withSpatial(input.shape, g[g.size() - 2], g[g.size() - 1]), op,
              "grad_output");
  return {input};
}

void adaptiveAvgPoolBackwardReference(const std::vector<const Tensor*>& inputs, const AttrMap&,
                                      std::vector<Tensor>& outputs) {
  PlaneGeometry g(*inputs[1], *inputs[0]);
  std::vector<double> gradOut = inputs[0]->toDoubles();
  std::vector<double> gradIn(static_cast<size_t>(outputs[0].numel()), 0.0);
  forEachAdaptiveCell(g, [&](int64_t in, int64_t o, double area) {
    gradIn[static_cast<size_t>(in)] += gradOut[static_cast<size_t>(o)] / area;
  });
  store(outputs[0], gradIn);
}

// Backward schemas spell out every argument: the same names as the forward op, no defaults.
std::vector<AttrSpec> allRequired(std::vector<AttrSpec> attrs) {
  for (AttrSpec& a : attrs)
    a.defaultValue.reset();
  return attrs;
}

OpInfo poolingOp(std::string name, std::vector<OperandSpec> operands, std::vector<AttrSpec> attrs,
                 int numResults, std::string summary, InferFn infer, ReferenceFn reference) {
  OpInfo info;
  info.name = std::move(name);
  info.kind = OpKind::Pooling;
  info.operands = std::move(operands);
  info.attrs = std::move(attrs);
  info.numResults = numResults;
  info.summary = std::move(summary);
  info.infer = std::move(infer);
  info.reference = std::move(reference);
  return info;
}

} // namespace

void registerPoolingOps(OpRegistry& registry) {
  const AttrSpec kernel{"kernel_size", std::nullopt};
  const AttrSpec ceilMode{"ceil_mode", false};
  const std::vector<AttrSpec> maxPoolAttrs = {
      kernel, {"stride", IntList{}}, {"padding", IntList{0}}, {"dilation", IntList{1}}, ceilMode};
  const std::vector<AttrSpec> avgPoolAttrs = {
      kernel,   {"stride", IntList{}},       {"padding", IntList{0}},
      ceilMode, {"count_include_pad", true}, {"divisor_override", NoneAttr{}}};

  registry.add(poolingOp("aten.max_pool2d_with_indices", {{"self"}}, maxPoolAttrs, 2,
                         "2-D max pooling; indices are flat h * W + w positions in each plane",
                         inferMaxPool, maxPoolReference));
  registry.add(poolingOp("aten.max_pool2d_with_indices_backward",
                         {{"grad_output"}, {"self"}, {"indices"}}, allRequired(maxPoolAttrs), 1,
                         "gradient of max pooling: each output's gradient to its argmax",
                         inferMaxPoolBackward, maxPoolBackwardReference));
  registry.add(poolingOp("aten.avg_pool2d", {{"self"}}, avgPoolAttrs, 1, "2-D average pooling",
                         inferAvgPool, avgPoolReference));
  registry.add(poolingOp("aten.avg_pool2d_backward", {{"grad_output"}, {"self"}},
                         allRequired(avgPoolAttrs), 1, "gradient of 2-D average pooling",
                         inferAvgPoolBackward, avgPoolBackwardReference));
  registry.add(poolingOp("aten._adaptive_avg_pool2d", {{"self"}}, {{"output_size", std::nullopt}},
                         1, "2-D adaptive average pooling to a given output size",
                         inferAdaptiveAvgPool, adaptiveAvgPoolReference));
  registry.add(poolingOp("aten._adaptive_avg_pool2d_backward", {{"grad_output"}, {"self"}}, {}, 1,
                         "gradient of 2-D adaptive average pooling", inferAdaptiveAvgPoolBackward,
                         adaptiveAvgPoolBackwardReference));
}

} // namespace loupe
