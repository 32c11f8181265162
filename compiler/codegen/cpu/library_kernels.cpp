#include "compiler/codegen/cpu/library_kernels.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include "compiler/ir/error.h"

namespace loupe {

namespace {

// A 2-D view as BLAS sees it: row-major with a leading dimension, or the transpose of one.
struct BlasMatrix {
  const void* data;
  CBLAS_TRANSPOSE transpose;
  int leading;
  Tensor packed; // keeps a packed copy alive when the view fits neither form
};

BlasMatrix asBlasMatrix(const Tensor& m) {
  int64_t rows = m.size(0), cols = m.size(1);
  // The stride of a size-1 dim is never used, so any value fits.
  int64_t rowStride = rows == 1 ? std::max<int64_t>(cols, 1) : m.strides()[0];
  int64_t colStride = cols == 1 ? 1 : m.strides()[1];
  if (colStride == 1 && rowStride >= std::max<int64_t>(cols, 1))
    return {m.data(), CblasNoTrans, static_cast<int>(rowStride), {}};
  rowStride = rows == 1 ? 1 : m.strides()[0];
  colStride = cols == 1 ? std::max<int64_t>(rows, 1) : m.strides()[1];
  if (rowStride == 1 && colStride >= std::max<int64_t>(rows, 1))
    return {m.data(), CblasTrans, static_cast<int>(colStride), {}};
  Tensor packed = m.clone();
  return {packed.data(), CblasNoTrans, static_cast<int>(std::max<int64_t>(cols, 1)), packed};
}

// c = a @ b, or c += a @ b with `accumulate`.
void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, const float* a, int lda,
          const float* b, int ldb, float* c, int ldc, bool accumulate = false) {
  cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, 1.0f, a, lda, b, ldb, accumulate ? 1.0f : 0.0f, c,
              ldc);
}

void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, const double* a, int lda,
          const double* b, int ldb, double* c, int ldc, bool accumulate = false) {
  cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, 1.0, a, lda, b, ldb, accumulate ? 1.0 : 0.0, c, ldc);
}

// c = a @ b for 2-D views; c is contiguous.
template <typename T>
void matmul(const Tensor& a, const Tensor& b, const Tensor& c) {
  int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  if (m == 0 || n == 0) return;
  if (k == 0) {
    std::memset(c.data(), 0, c.nbytes());
    return;
  }
  BlasMatrix left = asBlasMatrix(a), right = asBlasMatrix(b);
  gemm(left.transpose, right.transpose, static_cast<int>(m), static_cast<int>(n),
       static_cast<int>(k), static_cast<const T*>(left.data), left.leading,
       static_cast<const T*>(right.data), right.leading, c.dataAs<T>(), static_cast<int>(n));
}

Tensor batchItem(const Tensor& t, int64_t i) {
  return t.view({t.size(1), t.size(2)}, {t.strides()[1], t.strides()[2]},
                t.offset() + i * t.strides()[0]);
}

template <typename T>
void batchedMatmul(const Tensor& a, const Tensor& b, const Tensor& c) {
  for (int64_t i = 0; i < c.size(0); ++i)
    matmul<T>(batchItem(a, i), batchItem(b, i), batchItem(c, i));
}

std::vector<int64_t> pair(const AttrMap& attrs, const char* name) {
  std::vector<int64_t> values = attrs.getInts(name);
  if (values.size() == 1) values.push_back(values[0]);
  return values;
}

// The sizes of a 2-D convolution; `output` is its result (or the gradient of it).
struct Conv2dGeometry {
  int64_t batch, channels, height, width; // input
  int64_t filters, groupChannels, kh, kw; // weight
  int64_t outH, outW;
  std::vector<int64_t> stride, padding, dilation;
  int64_t groups;

  Conv2dGeometry(const Tensor& input, const Tensor& weight, const Tensor& output,
                 const AttrMap& attrs)
      : batch(input.size(0)), channels(input.size(1)), height(input.size(2)), width(input.size(3)),
        filters(weight.size(0)), groupChannels(weight.size(1)), kh(weight.size(2)),
        kw(weight.size(3)), outH(output.size(2)), outW(output.size(3)),
        stride(pair(attrs, "stride")), padding(pair(attrs, "padding")),
        dilation(pair(attrs, "dilation")), groups(attrs.getInt("groups", 1)) {}

  int64_t pixels() const { return outH * outW; }
  int64_t patch() const { return groupChannels * kh * kw; }
  int64_t groupFilters() const { return filters / groups; }
  // Where image n's group g starts in the input (or its gradient).
  int64_t groupInputOffset(int64_t n, int64_t g) const {
    return (n * channels + g * groupChannels) * height * width;
  }
  int64_t groupOutputOffset(int64_t n, int64_t g) const {
    return (n * filters + g * groupFilters()) * pixels();
  }

  // visit(column, inputOffset) for every entry of one image's group's column matrix
  // [patch, pixels]: the offset of the input element it holds from the group's first one, or
  // -1 where the receptive field lies in the padding. im2col and col2im share this walk.
  template <typename Visit>
  void forEachColumnEntry(Visit visit) const {
    for (int64_t row = 0; row < patch(); ++row) {
      int64_t c = row / (kh * kw), ki = row / kw % kh, kj = row % kw;
      for (int64_t oh = 0; oh < outH; ++oh) {
        int64_t ih = oh * stride[0] - padding[0] + ki * dilation[0];
        for (int64_t ow = 0; ow < outW; ++ow) {
          int64_t iw = ow * stride[1] - padding[1] + kj * dilation[1];
          bool inside = ih >= 0 && ih < height && iw >= 0 && iw < width;
          visit(row * pixels() + oh * outW + ow, inside ? (c * height + ih) * width + iw : -1);
        }
      }
    }
  }
};

template <typename T>
void im2col(const Conv2dGeometry& g, const T* groupInput, std::vector<T>& columns) {
  g.forEachColumnEntry([&](int64_t column, int64_t offset) {
    columns[static_cast<size_t>(column)] = offset < 0 ? T(0) : groupInput[offset];
  });
}

template <typename T>
void col2imAdd(const Conv2dGeometry& g, const std::vector<T>& columns, T* groupGradInput) {
  g.forEachColumnEntry([&](int64_t column, int64_t offset) {
    if (offset >= 0) groupGradInput[offset] += columns[static_cast<size_t>(column)];
  });
}

// Each image and group: unfold the receptive fields into columns, then one gemm with the
// group's filters.
template <typename T>
void convolution2d(const std::vector<const Tensor*>& inputs, const AttrMap& attrs, Tensor& out) {
  Tensor x = inputs[0]->contiguous(), w = inputs[1]->contiguous();
  Conv2dGeometry g(x, w, out, attrs);
  int64_t pixels = g.pixels(), patch = g.patch(), groupFilters = g.groupFilters();
  std::vector<T> columns(static_cast<size_t>(patch * pixels));
  T* output = out.dataAs<T>();
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t group = 0; group < g.groups; ++group) {
      if (pixels == 0 || groupFilters == 0) continue;
      im2col(g, x.dataAs<T>() + g.groupInputOffset(n, group), columns);
      gemm(CblasNoTrans, CblasNoTrans, static_cast<int>(groupFilters), static_cast<int>(pixels),
           static_cast<int>(patch), w.dataAs<T>() + group * groupFilters * patch,
           static_cast<int>(patch), columns.data(), static_cast<int>(pixels),
           output + g.groupOutputOffset(n, group), static_cast<int>(pixels));
    }
  if (inputs.size() > 2 && inputs[2]) {
    Tensor bias = inputs[2]->contiguous();
    for (int64_t n = 0; n < g.batch; ++n)
      for (int64_t f = 0; f < g.filters; ++f) {
        T* plane = output + (n * g.filters + f) * pixels;
        for (int64_t p = 0; p < pixels; ++p)
          plane[p] += bias.dataAs<T>()[f];
      }
  }
}

// The three gradients of a 2-D convolution, per image and group over the same column matrix
// as the forward: grad_weight += grad_out @ columns^T, and grad_input is col2im of
// weight^T @ grad_out. Results output_mask leaves out are zeros, as in the reference.
template <typename T>
void convolution2dBackward(const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
                           std::vector<Tensor>& outputs) {
  Tensor gradOut = inputs[0]->contiguous(), x = inputs[1]->contiguous(),
         w = inputs[2]->contiguous();
  Conv2dGeometry g(x, w, gradOut, attrs);
  BoolList mask = attrs.getBools("output_mask");
  for (Tensor& output : outputs)
    std::memset(output.data(), 0, output.nbytes());
  int64_t pixels = g.pixels(), patch = g.patch(), groupFilters = g.groupFilters();
  std::vector<T> columns(static_cast<size_t>(patch * pixels));
  T* gradInput = outputs[0].dataAs<T>();
  T* gradWeight = outputs[1].dataAs<T>();
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t group = 0; group < g.groups; ++group) {
      if (pixels == 0 || groupFilters == 0 || patch == 0) continue;
      const T* groupGradOut = gradOut.dataAs<T>() + g.groupOutputOffset(n, group);
      const T* groupWeight = w.dataAs<T>() + group * groupFilters * patch;
      if (mask[1]) {
        im2col(g, x.dataAs<T>() + g.groupInputOffset(n, group), columns);
        gemm(CblasNoTrans, CblasTrans, static_cast<int>(groupFilters), static_cast<int>(patch),
             static_cast<int>(pixels), groupGradOut, static_cast<int>(pixels), columns.data(),
             static_cast<int>(pixels), gradWeight + group * groupFilters * patch,
             static_cast<int>(patch), /*accumulate=*/true);
      }
      if (mask[0]) {
        gemm(CblasTrans, CblasNoTrans, static_cast<int>(patch), static_cast<int>(pixels),
             static_cast<int>(groupFilters), groupWeight, static_cast<int>(patch), groupGradOut,
             static_cast<int>(pixels), columns.data(), static_cast<int>(pixels));
        col2imAdd(g, columns, gradInput + g.groupInputOffset(n, group));
      }
    }
  if (mask[2]) {
    T* gradBias = outputs[2].dataAs<T>();
    for (int64_t n = 0; n < g.batch; ++n)
      for (int64_t f = 0; f < g.filters; ++f) {
        const T* plane = gradOut.dataAs<T>() + (n * g.filters + f) * pixels;
        T sum = 0;
        for (int64_t p = 0; p < pixels; ++p)
          sum += plane[p];
        gradBias[f] += sum;
      }
  }
}

// Max pooling over the last two dims, every leading dim flattened into planes; indices are the
// flat h * W + w position in the plane, as torch's. Window parameters as the op's attributes.
struct PoolGeometry {
  int64_t planes, inH, inW, outH, outW;
  std::vector<int64_t> kernel, stride, padding, dilation;

  PoolGeometry(const Tensor& input, const Tensor& output, const AttrMap& attrs)
      : inH(input.size(input.rank() - 2)), inW(input.size(input.rank() - 1)),
        outH(output.size(output.rank() - 2)), outW(output.size(output.rank() - 1)),
        kernel(pair(attrs, "kernel_size")),
        stride(attrs.isNone("stride") || attrs.getInts("stride").empty() ? kernel
                                                                         : pair(attrs, "stride")),
        padding(attrs.isNone("padding") ? std::vector<int64_t>{0, 0} : pair(attrs, "padding")),
        dilation(attrs.isNone("dilation") ? std::vector<int64_t>{1, 1} : pair(attrs, "dilation")) {
    planes = inH * inW == 0 ? 0 : input.numel() / (inH * inW);
  }
};

template <typename T>
void maxPool2d(const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
               std::vector<Tensor>& outputs) {
  Tensor x = inputs[0]->contiguous();
  PoolGeometry g(x, outputs[0], attrs);
  T* out = outputs[0].dataAs<T>();
  auto* indices = outputs[1].dataAs<int64_t>();
  for (int64_t p = 0; p < g.planes; ++p) {
    const T* plane = x.dataAs<T>() + p * g.inH * g.inW;
    for (int64_t oh = 0; oh < g.outH; ++oh)
      for (int64_t ow = 0; ow < g.outW; ++ow) {
        T best = 0;
        int64_t bestIndex = -1;
        for (int64_t ki = 0; ki < g.kernel[0]; ++ki) {
          int64_t ih = oh * g.stride[0] - g.padding[0] + ki * g.dilation[0];
          if (ih < 0 || ih >= g.inH) continue;
          for (int64_t kj = 0; kj < g.kernel[1]; ++kj) {
            int64_t iw = ow * g.stride[1] - g.padding[1] + kj * g.dilation[1];
            if (iw < 0 || iw >= g.inW) continue;
            // torch keeps the first maximum and lets NaN win, so NaN propagates.
            T v = plane[ih * g.inW + iw];
            if (bestIndex < 0 || v > best || std::isnan(v)) {
              best = v;
              bestIndex = ih * g.inW + iw;
            }
          }
        }
        int64_t o = (p * g.outH + oh) * g.outW + ow;
        out[o] = bestIndex < 0 ? -std::numeric_limits<T>::infinity() : best;
        indices[o] = bestIndex;
      }
  }
}

// Each output's gradient goes to the input position its index names.
template <typename T>
void maxPool2dBackward(const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
                       std::vector<Tensor>& outputs) {
  Tensor gradOut = inputs[0]->contiguous(), indices = inputs[2]->contiguous();
  PoolGeometry g(*inputs[1], gradOut, attrs);
  T* gradIn = outputs[0].dataAs<T>();
  std::memset(gradIn, 0, outputs[0].nbytes());
  const T* grad = gradOut.dataAs<T>();
  const auto* index = indices.dataAs<int64_t>();
  int64_t pooled = g.outH * g.outW;
  for (int64_t p = 0; p < g.planes; ++p)
    for (int64_t o = p * pooled; o < (p + 1) * pooled; ++o)
      gradIn[p * g.inH * g.inW + index[o]] += grad[o];
}

// One channel's parameter, or `fallback` where the optional operand is absent.
template <typename T>
std::vector<T> perChannel(const std::vector<const Tensor*>& inputs, size_t i, int64_t channels,
                          T fallback) {
  if (i >= inputs.size() || !inputs[i])
    return std::vector<T>(static_cast<size_t>(channels), fallback);
  Tensor packed = inputs[i]->contiguous();
  return {packed.dataAs<T>(), packed.dataAs<T>() + channels};
}

// The batch norm forms' forward in the input's precision; only the per-channel statistics
// accumulate in double, so a large channel does not lose the mean to rounding.
template <typename T>
void batchNorm(const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
               std::vector<Tensor>& outputs) {
  Tensor x = inputs[0]->contiguous();
  int64_t batch = x.size(0), channels = x.size(1);
  int64_t inner = batch * channels == 0 ? 0 : x.numel() / (batch * channels);
  bool training = attrs.getBool("training", false);
  double eps = attrs.getFloat("eps"), momentum = attrs.getFloat("momentum");
  std::vector<T> weight = perChannel<T>(inputs, 1, channels, T(1)),
                 bias = perChannel<T>(inputs, 2, channels, T(0)),
                 runMean = perChannel<T>(inputs, 3, channels, T(0)),
                 runVar = perChannel<T>(inputs, 4, channels, T(1));
  std::vector<double> mean(runMean.begin(), runMean.end()), var(runVar.begin(), runVar.end());
  const T* in = x.dataAs<T>();
  auto plane = [&](int64_t n, int64_t c) { return (n * channels + c) * inner; };
  if (training)
    for (int64_t c = 0; c < channels; ++c) {
      double sum = 0, squares = 0;
      for (int64_t n = 0; n < batch; ++n)
        for (int64_t i = 0; i < inner; ++i)
          sum += in[plane(n, c) + i];
      mean[c] = sum / static_cast<double>(batch * inner);
      for (int64_t n = 0; n < batch; ++n)
        for (int64_t i = 0; i < inner; ++i) {
          double d = in[plane(n, c) + i] - mean[c];
          squares += d * d;
        }
      var[c] = squares / static_cast<double>(batch * inner);
    }
  T* out = outputs[0].dataAs<T>();
  for (int64_t c = 0; c < channels; ++c) {
    double rstd = 1.0 / std::sqrt(var[c] + eps);
    auto scale = static_cast<T>(rstd * weight[c]);
    auto shift = static_cast<T>(bias[c] - mean[c] * rstd * weight[c]);
    for (int64_t n = 0; n < batch; ++n)
      for (int64_t i = 0; i < inner; ++i)
        out[plane(n, c) + i] = in[plane(n, c) + i] * scale + shift;
    if (outputs[1].numel() > 0) {
      outputs[1].dataAs<T>()[c] = static_cast<T>(mean[c]);
      outputs[2].dataAs<T>()[c] = static_cast<T>(rstd);
    }
    if (outputs.size() < 5) continue; // only the functional form returns new running stats
    auto n = static_cast<double>(batch * inner);
    bool update = training && inputs.size() > 4 && inputs[3] && inputs[4];
    outputs[3].dataAs<T>()[c] =
        update ? static_cast<T>(momentum * mean[c] + (1 - momentum) * runMean[c]) : runMean[c];
    outputs[4].dataAs<T>()[c] =
        update ? static_cast<T>(momentum * var[c] * n / (n - 1) + (1 - momentum) * runVar[c])
               : runVar[c];
  }
}

bool isBatchNorm(const std::string& op) {
  return op == "aten._native_batch_norm_legit_functional" ||
         op == "aten._native_batch_norm_legit_no_training" || op == "aten.native_batch_norm";
}

bool isBlasDType(DType dtype) {
  return dtype == DType::F32 || dtype == DType::F64;
}

// What each floating-point library kernel records; the index tensors of max pooling (its second
// result, its backward's third operand) are i64, every other value is in the first result's
// dtype. `precision` is "f32" or "f64".
struct FloatKernel {
  const char* op;
  std::function<CpuLibraryKernel(const std::string& precision)> describe;
  std::optional<size_t> indexOperand, indexResult;
};

const std::vector<FloatKernel>& floatKernels() {
  static const std::vector<FloatKernel> kernels = [] {
    auto gemmKernel = [](const std::string& precision) {
      return CpuLibraryKernel{precision == "f32" ? "openblas:sgemm" : "openblas:dgemm",
                              "BLAS gemm for " + precision, "no generated matmul; BLAS is faster"};
    };
    auto batchNorm = [](const std::string& precision) {
      return CpuLibraryKernel{"batch-norm:" + precision,
                              "per-channel statistics in double, normalisation in " + precision,
                              "batch norm is not an elementwise or reduction op the code "
                              "generator handles"};
    };
    std::vector<FloatKernel> table = {
        {"aten.mm", gemmKernel},
        {"aten.bmm", gemmKernel},
        {"aten.convolution",
         [](const std::string&) {
           return CpuLibraryKernel{"im2col+gemm",
                                   "convolution as im2col and one BLAS gemm per group",
                                   "no generated convolution; im2col+gemm is faster"};
         }},
        {"aten.convolution_backward",
         [](const std::string&) {
           return CpuLibraryKernel{"im2col+gemm backward",
                                   "gradients as BLAS gemms over the forward's im2col columns",
                                   "no generated convolution; im2col+gemm is faster"};
         }},
        {"aten.max_pool2d_with_indices",
         [](const std::string& precision) {
           return CpuLibraryKernel{"max-pool:" + precision, "window maximum in " + precision,
                                   "pooling windows are not a reduction the code generator "
                                   "handles"};
         },
         std::nullopt, 1},
        {"aten.max_pool2d_with_indices_backward",
         [](const std::string& precision) {
           return CpuLibraryKernel{"max-pool-backward:" + precision,
                                   "scatter of each gradient to its argmax in " + precision,
                                   "a scatter is not a kernel the code generator handles"};
         },
         2, std::nullopt},
    };
    for (const char* op : {"aten._native_batch_norm_legit_functional",
                           "aten._native_batch_norm_legit_no_training", "aten.native_batch_norm"})
      table.push_back({op, batchNorm});
    return table;
  }();
  return kernels;
}

bool isTwoDConvolution(const Node& node) {
  return node.operand(node.op() == "aten.convolution" ? 0 : 1)->tensorType().rank() == 4;
}

// False for an op no floating-point kernel handles.
template <typename T>
bool runFloatKernel(const std::string& op, const AttrMap& attrs,
                    const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  if (op == "aten.mm")
    matmul<T>(*inputs[0], *inputs[1], outputs[0]);
  else if (op == "aten.bmm")
    batchedMatmul<T>(*inputs[0], *inputs[1], outputs[0]);
  else if (op == "aten.convolution")
    convolution2d<T>(inputs, attrs, outputs[0]);
  else if (op == "aten.convolution_backward")
    convolution2dBackward<T>(inputs, attrs, outputs);
  else if (op == "aten.max_pool2d_with_indices")
    maxPool2d<T>(inputs, attrs, outputs);
  else if (op == "aten.max_pool2d_with_indices_backward")
    maxPool2dBackward<T>(inputs, attrs, outputs);
  else if (isBatchNorm(op))
    batchNorm<T>(inputs, attrs, outputs);
  else
    return false;
  return true;
}

} // namespace

std::optional<CpuLibraryKernel> findCpuLibraryKernel(const Node& node, std::string* whyNot) {
  auto no = [&](std::string why) -> std::optional<CpuLibraryKernel> {
    if (whyNot) *whyNot = std::move(why);
    return std::nullopt;
  };
  const std::string& op = node.op();
  if (op == "aten.clone")
    return CpuLibraryKernel{"copy", "a memcpy, or a strided copy in the tensor's own dtype",
                            "a copy needs no generated code"};
  auto kernel = std::find_if(floatKernels().begin(), floatKernels().end(),
                             [&](const FloatKernel& k) { return op == k.op; });
  if (kernel == floatKernels().end()) return no("no library kernel for " + op);
  if (!node.numResults() || !node.result(0)->type().isTensor())
    return no(op + " has no tensor result");
  DType dtype = node.result(0)->tensorType().dtype;
  if (!isBlasDType(dtype))
    return no("library kernels compute in f32 or f64 only, not " + std::string(dtypeName(dtype)));
  auto hasDType = [](const Value* value, DType expected) {
    return value->type().isTensor() && value->tensorType().dtype == expected;
  };
  for (size_t i = 0; i < node.numOperands(); ++i)
    if (const Value* operand = node.operand(i);
        operand && !hasDType(operand, kernel->indexOperand == i ? DType::I64 : dtype))
      return no(kernel->indexOperand == i ? "the indices operand must be i64"
                                          : "library kernels need every operand in the result's "
                                            "dtype");
  for (size_t i = 0; i < node.numResults(); ++i)
    if (!hasDType(node.result(i), kernel->indexResult == i ? DType::I64 : dtype))
      return no("library kernels need every result in the first result's dtype");
  if (op.starts_with("aten.convolution")) {
    if (!isTwoDConvolution(node)) return no("only 2-D convolution has a library kernel");
    if (node.attrs().getBool("transposed", false))
      return no("transposed convolution has no library kernel");
  }
  return kernel->describe(std::string(dtypeName(dtype)));
}

void setCpuLibraryThreads(int threads) {
  static int current = 0;
  if (threads > 0 && threads != current) {
    openblas_set_num_threads(threads);
    current = threads;
  }
}

void runCpuLibraryKernel(const Node& node, const AttrMap& attrs,
                         const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const std::string& op = node.op();
  if (op == "aten.clone") {
    outputs[0].copyFrom(*inputs[0]);
    return;
  }
  bool ran = outputs[0].dtype() == DType::F64 ? runFloatKernel<double>(op, attrs, inputs, outputs)
                                              : runFloatKernel<float>(op, attrs, inputs, outputs);
  if (!ran)
    throw Error("runtime", "no library kernel for " + op, ErrorContext{.node = node.describe()});
}

} // namespace loupe
