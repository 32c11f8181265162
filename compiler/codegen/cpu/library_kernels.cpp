#include "compiler/codegen/cpu/library_kernels.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>

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

void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, const float* a, int lda,
          const float* b, int ldb, float* c, int ldc) {
  cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
}

void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, const double* a, int lda,
          const double* b, int ldb, double* c, int ldc) {
  cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, 1.0, a, lda, b, ldb, 0.0, c, ldc);
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

// Each image and group: unfold the receptive fields into columns, then one gemm with the
// group's filters.
template <typename T>
void convolution2d(const std::vector<const Tensor*>& inputs, const AttrMap& attrs, Tensor& out) {
  Tensor x = inputs[0]->contiguous(), w = inputs[1]->contiguous();
  std::vector<int64_t> stride = pair(attrs, "stride"), padding = pair(attrs, "padding"),
                       dilation = pair(attrs, "dilation");
  int64_t groups = attrs.getInt("groups", 1);
  int64_t batch = x.size(0), channels = x.size(1), height = x.size(2), width = x.size(3);
  int64_t filters = w.size(0), groupChannels = w.size(1), kh = w.size(2), kw = w.size(3);
  int64_t outH = out.size(2), outW = out.size(3), pixels = outH * outW;
  int64_t groupFilters = filters / groups, patch = groupChannels * kh * kw;
  std::vector<T> columns(static_cast<size_t>(patch * pixels));
  const T* input = x.dataAs<T>();
  T* output = out.dataAs<T>();
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t g = 0; g < groups; ++g) {
      for (int64_t row = 0; row < patch; ++row) {
        int64_t c = row / (kh * kw), ki = row / kw % kh, kj = row % kw;
        const T* plane = input + (n * channels + g * groupChannels + c) * height * width;
        for (int64_t oh = 0; oh < outH; ++oh)
          for (int64_t ow = 0; ow < outW; ++ow) {
            int64_t ih = oh * stride[0] - padding[0] + ki * dilation[0];
            int64_t iw = ow * stride[1] - padding[1] + kj * dilation[1];
            bool inside = ih >= 0 && ih < height && iw >= 0 && iw < width;
            columns[static_cast<size_t>(row * pixels + oh * outW + ow)] =
                inside ? plane[ih * width + iw] : T(0);
          }
      }
      if (pixels == 0 || groupFilters == 0) continue;
      gemm(CblasNoTrans, CblasNoTrans, static_cast<int>(groupFilters), static_cast<int>(pixels),
           static_cast<int>(patch), w.dataAs<T>() + g * groupFilters * patch,
           static_cast<int>(patch), columns.data(), static_cast<int>(pixels),
           output + (n * filters + g * groupFilters) * pixels, static_cast<int>(pixels));
    }
  if (inputs.size() > 2 && inputs[2]) {
    Tensor bias = inputs[2]->contiguous();
    for (int64_t n = 0; n < batch; ++n)
      for (int64_t f = 0; f < filters; ++f) {
        T* plane = output + (n * filters + f) * pixels;
        for (int64_t p = 0; p < pixels; ++p)
          plane[p] += bias.dataAs<T>()[f];
      }
  }
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

} // namespace

std::optional<CpuLibraryKernel> findCpuLibraryKernel(const Node& node, std::string* whyNot) {
  auto no = [&](std::string why) -> std::optional<CpuLibraryKernel> {
    if (whyNot) *whyNot = std::move(why);
    return std::nullopt;
  };
  const std::string& op = node.op();
  bool matmul = op == "aten.mm" || op == "aten.bmm";
  if (!matmul && op != "aten.convolution" && !isBatchNorm(op))
    return no("no library kernel for " + op);
  if (!node.numResults() || !node.result(0)->type().isTensor())
    return no(op + " has no tensor result");
  DType dtype = node.result(0)->tensorType().dtype;
  if (!isBlasDType(dtype))
    return no("library kernels compute in f32 or f64 only, not " + std::string(dtypeName(dtype)));
  for (const Value* operand : node.operands())
    if (operand && (!operand->type().isTensor() || operand->tensorType().dtype != dtype))
      return no("library kernels need every operand in the result's dtype");
  for (const Value* result : node.results())
    if (!result->type().isTensor() || result->tensorType().dtype != dtype)
      return no("library kernels need every result in the first result's dtype");
  std::string precision(dtypeName(dtype));
  if (matmul)
    return CpuLibraryKernel{dtype == DType::F32 ? "openblas:sgemm" : "openblas:dgemm",
                            "BLAS gemm for " + precision, "no generated matmul; BLAS is faster"};
  if (op == "aten.convolution") {
    if (node.operand(0)->tensorType().rank() != 4)
      return no("only 2-D convolution has a library kernel");
    if (node.attrs().getBool("transposed", false))
      return no("transposed convolution has no library kernel");
    return CpuLibraryKernel{"im2col+gemm", "convolution as im2col and one BLAS gemm per group",
                            "no generated convolution; im2col+gemm is faster"};
  }
  return CpuLibraryKernel{"batch-norm:" + precision,
                          "per-channel statistics in double, normalisation in " + precision,
                          "batch norm is not an elementwise or reduction op the code generator "
                          "handles"};
}

void runCpuLibraryKernel(const Node& node, const AttrMap& attrs,
                         const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  bool f64 = outputs[0].dtype() == DType::F64;
  const std::string& op = node.op();
  if (op == "aten.mm")
    f64 ? matmul<double>(*inputs[0], *inputs[1], outputs[0])
        : matmul<float>(*inputs[0], *inputs[1], outputs[0]);
  else if (op == "aten.bmm")
    f64 ? batchedMatmul<double>(*inputs[0], *inputs[1], outputs[0])
        : batchedMatmul<float>(*inputs[0], *inputs[1], outputs[0]);
  else if (op == "aten.convolution")
    f64 ? convolution2d<double>(inputs, attrs, outputs[0])
        : convolution2d<float>(inputs, attrs, outputs[0]);
  else if (isBatchNorm(op))
    f64 ? batchNorm<double>(inputs, attrs, outputs) : batchNorm<float>(inputs, attrs, outputs);
  else
    throw Error("runtime", "no library kernel for " + op, ErrorContext{.node = node.describe()});
}

} // namespace loupe
