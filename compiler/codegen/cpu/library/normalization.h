// Batch norm (forward and backward) and the layer norm backward in the input's precision. Batch
// norm's reductions (batch statistics, the per-channel sums of the gradient and of its product
// with the normalized input) accumulate in double; layer norm's per-row sums, a few hundred
// elements each, are in T over the vector's lanes, as torch's, and its weight and bias gradients
// over rows in T over blocks of rows, then in double. The elementwise results are computed in T
// from those sums, as torch's CPU kernels do. Channels (batch norm) and rows (layer norm) are split
// across the library threads, and the hot loops are vector loops compiled for AVX2 too
// (vector_clones.h). (The layer norm forward decomposes into generated kernels.)
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "compiler/codegen/cpu/library/parallel_ranges.h"
#include "compiler/codegen/cpu/library/vector_clones.h"
#include "compiler/ir/attribute.h"
#include "compiler/tensor/tensor.h"

namespace loupe::library {

// Operand i as a packed vector of `size` values, or `fallback` where the optional operand is
// absent.
template <typename T>
std::vector<T> packedOr(const std::vector<const Tensor*>& inputs, size_t i, int64_t size,
                        T fallback) {
  if (i >= inputs.size() || !inputs[i]) return std::vector<T>(static_cast<size_t>(size), fallback);
  Tensor packed = inputs[i]->contiguous();
  return {packed.dataAs<T>(), packed.dataAs<T>() + size};
}

// A batch norm's channel is `batch` planes of `inner` contiguous elements, one every
// channels * inner: the kernels below walk a channel plane by plane, each plane one vector loop,
// and split the channels across the library threads (each channel's sums are one thread's, in
// plane order, so the result does not depend on the thread count).
struct ChannelPlanes {
  int64_t batch, channels, inner;

  explicit ChannelPlanes(const Tensor& x)
      : batch(x.size(0)), channels(x.size(1)),
        inner(batch * channels == 0 ? 0 : x.numel() / (batch * channels)) {}
  int64_t plane(int64_t n, int64_t c) const { return (n * channels + c) * inner; }
  double count() const { return static_cast<double>(batch * inner); }

  // body(c) for every channel, the channels split across the library threads.
  template <typename Body>
  void forEachChannel(Body body) const {
    parallelRanges(parallelParts(channels, batch * inner), channels,
                   [&](int, int64_t first, int64_t last) {
                     for (int64_t c = first; c < last; ++c)
                       body(c);
                   });
  }
};

// The sum of a plane's elements, and the sum of their squared distances from `center`, in
// double (vector lanes summed at the end; AVX2 where the machine has it, vector_clones.h).
template <typename T>
LOUPE_VECTOR_CLONES double planeSum(const T* in, int64_t size) {
  double sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < size; ++i)
    sum += in[i];
  return sum;
}

template <typename T>
LOUPE_VECTOR_CLONES double planeSquares(const T* in, int64_t size, double center) {
  double squares = 0;
#pragma omp simd reduction(+ : squares)
  for (int64_t i = 0; i < size; ++i) {
    double d = in[i] - center;
    squares += d * d;
  }
  return squares;
}

// out = in * scale + shift over one plane.
template <typename T>
LOUPE_VECTOR_CLONES void planeAffine(const T* in, int64_t size, T scale, T shift, T* out) {
#pragma omp simd
  for (int64_t i = 0; i < size; ++i)
    out[i] = in[i] * scale + shift;
}

// The batch norm forms' forward in the input's precision; only the per-channel statistics
// accumulate in double, so a large channel does not lose the mean to rounding. Channels split
// across the library threads, each read twice for its statistics (the mean, then the squared
// distances from it: a single pass of sums and squares would cancel) and once to normalise.
template <typename T>
void batchNorm(const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
               std::vector<Tensor>& outputs) {
  Tensor x = inputs[0]->contiguous();
  ChannelPlanes planes(x);
  int64_t channels = planes.channels;
  bool training = attrs.getBool("training", false);
  double eps = attrs.getFloat("eps"), momentum = attrs.getFloat("momentum");
  std::vector<T> weight = packedOr<T>(inputs, 1, channels, T(1)),
                 bias = packedOr<T>(inputs, 2, channels, T(0)),
                 runMean = packedOr<T>(inputs, 3, channels, T(0)),
                 runVar = packedOr<T>(inputs, 4, channels, T(1));
  std::vector<double> mean(runMean.begin(), runMean.end()), var(runVar.begin(), runVar.end());
  const T* in = x.dataAs<T>();
  T* out = outputs[0].dataAs<T>();
  planes.forEachChannel([&](int64_t c) {
    if (training) {
      double sum = 0, squares = 0;
      for (int64_t n = 0; n < planes.batch; ++n)
        sum += planeSum(in + planes.plane(n, c), planes.inner);
      mean[c] = sum / planes.count();
      for (int64_t n = 0; n < planes.batch; ++n)
        squares += planeSquares(in + planes.plane(n, c), planes.inner, mean[c]);
      var[c] = squares / planes.count();
    }
    double rstd = 1.0 / std::sqrt(var[c] + eps);
    auto scale = static_cast<T>(rstd * weight[c]);
    auto shift = static_cast<T>(bias[c] - mean[c] * rstd * weight[c]);
    for (int64_t n = 0; n < planes.batch; ++n)
      planeAffine(in + planes.plane(n, c), planes.inner, scale, shift, out + planes.plane(n, c));
  });
  for (int64_t c = 0; c < channels; ++c) {
    if (outputs[1].numel() > 0) {
      outputs[1].dataAs<T>()[c] = static_cast<T>(mean[c]);
      outputs[2].dataAs<T>()[c] = static_cast<T>(1.0 / std::sqrt(var[c] + eps));
    }
    if (outputs.size() < 5) continue; // only the functional form returns new running stats
    double n = planes.count();
    bool update = training && inputs.size() > 4 && inputs[3] && inputs[4];
    outputs[3].dataAs<T>()[c] =
        update ? static_cast<T>(momentum * mean[c] + (1 - momentum) * runMean[c]) : runMean[c];
    outputs[4].dataAs<T>()[c] =
        update ? static_cast<T>(momentum * var[c] * n / (n - 1) + (1 - momentum) * runVar[c])
               : runVar[c];
  }
}

// Results the output_mask leaves out are zeros, as in the reference.
inline void zeroMasked(std::vector<Tensor>& outputs, const BoolList& mask) {
  for (size_t i = 0; i < outputs.size(); ++i)
    if (!mask[i]) std::memset(outputs[i].data(), 0, outputs[i].nbytes());
}

// A plane's sum of the gradient and of its products with the input's distance from `mean`, in
// double, added into sumG and dot: one read of both.
template <typename T>
LOUPE_VECTOR_CLONES void planeGradientSums(const T* grad, const T* in, int64_t size, double mean,
                                           double& sumG, double& dot) {
  double g = 0, gx = 0;
#pragma omp simd reduction(+ : g, gx)
  for (int64_t i = 0; i < size; ++i) {
    g += grad[i];
    gx += static_cast<double>(grad[i]) * (static_cast<double>(in[i]) - mean);
  }
  sumG += g;
  dot += gx;
}

// grad_input = (g - (x - mean) * projection - meanGrad) * scale over one plane.
template <typename T>
LOUPE_VECTOR_CLONES void planeGradInput(const T* grad, const T* in, int64_t size, T mean,
                                        T projection, T meanGrad, T scale, T* gradIn) {
#pragma omp simd
  for (int64_t i = 0; i < size; ++i)
    gradIn[i] = (grad[i] - (in[i] - mean) * projection - meanGrad) * scale;
}

// Operands: grad_out, input, weight?, running_mean?, running_var?, save_mean?, save_invstd?;
// results: grad_input, grad_weight, grad_bias. In training the batch statistics depend on the
// input, so their gradients are projected out of grad_input. Channels split across the library
// threads; each channel is read once for its two sums and once more for grad_input.
template <typename T>
void batchNormBackward(const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
                       std::vector<Tensor>& outputs) {
  Tensor g = inputs[0]->contiguous(), x = inputs[1]->contiguous();
  ChannelPlanes planes(x);
  int64_t channels = planes.channels;
  bool train = attrs.getBool("train");
  BoolList mask = attrs.getBools("output_mask");
  std::vector<T> weight = packedOr<T>(inputs, 2, channels, T(1));
  std::vector<double> mean(static_cast<size_t>(channels)), invstd(mean.size());
  if (train) {
    std::vector<T> saveMean = packedOr<T>(inputs, 5, channels, T(0)),
                   saveInvstd = packedOr<T>(inputs, 6, channels, T(1));
    mean.assign(saveMean.begin(), saveMean.end());
    invstd.assign(saveInvstd.begin(), saveInvstd.end());
  } else {
    std::vector<T> runMean = packedOr<T>(inputs, 3, channels, T(0)),
                   runVar = packedOr<T>(inputs, 4, channels, T(1));
    double eps = attrs.getFloat("eps");
    for (size_t c = 0; c < mean.size(); ++c) {
      mean[c] = runMean[c];
      invstd[c] = 1.0 / std::sqrt(static_cast<double>(runVar[c]) + eps);
    }
  }
  zeroMasked(outputs, mask);
  const T* grad = g.dataAs<T>();
  const T* in = x.dataAs<T>();
  double n = planes.count();
  planes.forEachChannel([&](int64_t c) {
    auto cc = static_cast<size_t>(c);
    double sumG = 0, dot = 0;
    for (int64_t b = 0; b < planes.batch; ++b)
      planeGradientSums(grad + planes.plane(b, c), in + planes.plane(b, c), planes.inner, mean[cc],
                        sumG, dot);
    if (mask[1]) outputs[1].dataAs<T>()[c] = static_cast<T>(dot * invstd[cc]);
    if (mask[2]) outputs[2].dataAs<T>()[c] = static_cast<T>(sumG);
    if (!mask[0]) return;
    auto scale = static_cast<T>(invstd[cc] * weight[cc]);
    auto projection = static_cast<T>(train ? dot / n * invstd[cc] * invstd[cc] : 0.0);
    auto meanGrad = static_cast<T>(train && n > 0 ? sumG / n : 0.0);
    for (int64_t b = 0; b < planes.batch; ++b)
      planeGradInput(grad + planes.plane(b, c), in + planes.plane(b, c), planes.inner,
                     static_cast<T>(mean[cc]), projection, meanGrad, scale,
                     outputs[0].dataAs<T>() + planes.plane(b, c));
  });
}

// Rows a layer norm backward sums its weight's and bias's gradients over in T before adding the
// sums into double: the per-element double sums, one add per element and row, took half the
// kernel's time (1.3 to 1.5x torch's, which sums every row of a thread in T); a few dozen rows
// in T keep the double sums' accuracy within a rounding of T.
constexpr int64_t kLayerNormRowBlock = 32;

// Rows [first, last) of the layer norm backward: their grad_input (when `gradInput` is not
// null), and their sums of the weight's and bias's gradients added into gradW and gradB. A row's
// own two sums are in T over the vector's lanes, as torch's. AVX2 where the machine has it
// (vector_clones.h).
template <typename T>
LOUPE_VECTOR_CLONES void layerNormBackwardRows(const T* g, const T* x, const T* mean, const T* rstd,
                                               const T* weight, int64_t width, int64_t first,
                                               int64_t last, T* gradInput, double* gradW,
                                               double* gradB) {
  std::vector<T> xhat(static_cast<size_t>(width)), blockW(xhat.size()), blockB(xhat.size());
  auto n = static_cast<T>(width);
  for (int64_t blockFirst = first; blockFirst < last; blockFirst += kLayerNormRowBlock) {
    std::fill(blockW.begin(), blockW.end(), T(0));
    std::fill(blockB.begin(), blockB.end(), T(0));
    int64_t blockLast = std::min(last, blockFirst + kLayerNormRowBlock);
    for (int64_t r = blockFirst; r < blockLast; ++r) {
      const T* grad = g + r * width;
      const T* in = x + r * width;
      T rowMean = mean[r], rowRstd = rstd[r];
      T sumG = 0, sumGX = 0;
#pragma omp simd reduction(+ : sumG, sumGX)
      for (int64_t j = 0; j < width; ++j) {
        xhat[j] = (in[j] - rowMean) * rowRstd;
        T gw = grad[j] * weight[j];
        sumG += gw;
        sumGX += gw * xhat[j];
        blockW[j] += grad[j] * xhat[j];
        blockB[j] += grad[j];
      }
      if (!gradInput) continue;
      // grad_input = rstd * (g * w - mean(g * w) - xhat * mean(g * w * xhat))
      T meanG = sumG / n, meanGX = sumGX / n;
      T* gradIn = gradInput + r * width;
      // The pragma matters at -O2 (development builds): 3.9 against 2.9 ms for 4096 x 768 rows
      // on one thread with AVX2; -O3 (the Python package) vectorised the loop without it.
#pragma omp simd
      for (int64_t j = 0; j < width; ++j)
        gradIn[j] = (grad[j] * weight[j] - meanG - xhat[j] * meanGX) * rowRstd;
    }
#pragma omp simd
    for (int64_t j = 0; j < width; ++j) {
      gradW[j] += blockW[j];
      gradB[j] += blockB[j];
    }
  }
}

// Operands: grad_out, input, mean, rstd, weight?, bias?; rows are the leading dims, the
// normalized_shape dims one row's width. Results: grad_input, grad_weight, grad_bias.
// Rows split across the library threads, each summing the weight's and bias's gradients over its
// own rows; the threads' sums are added in thread order.
template <typename T>
void layerNormBackward(const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
                       std::vector<Tensor>& outputs) {
  Tensor g = inputs[0]->contiguous(), x = inputs[1]->contiguous();
  Tensor mean = inputs[2]->contiguous(), rstd = inputs[3]->contiguous();
  int64_t width = 1;
  for (int64_t d : attrs.getInts("normalized_shape"))
    width *= d;
  int64_t rows = width == 0 ? 0 : x.numel() / width;
  BoolList mask = attrs.getBools("output_mask");
  std::vector<T> weight = packedOr<T>(inputs, 4, width, T(1));
  zeroMasked(outputs, mask);
  int parts = parallelParts(rows, width);
  // Per part: the weight's gradient sums, then the bias's.
  std::vector<double> sums(static_cast<size_t>(parts * 2 * width), 0.0);
  parallelRanges(parts, rows, [&](int part, int64_t first, int64_t last) {
    double* partSums = sums.data() + part * 2 * width;
    layerNormBackwardRows<T>(
        g.dataAs<T>(), x.dataAs<T>(), mean.dataAs<T>(), rstd.dataAs<T>(), weight.data(), width,
        first, last, mask[0] ? outputs[0].dataAs<T>() : nullptr, partSums, partSums + width);
  });
  for (int64_t i = 1; i <= 2; ++i)
    if (mask[i]) {
      T* out = outputs[i].dataAs<T>();
      for (int64_t j = 0; j < width; ++j) {
        double sum = 0;
        for (int part = 0; part < parts; ++part)
          sum += sums[(part * 2 + i - 1) * width + j];
        out[j] = static_cast<T>(sum);
      }
    }
}

} // namespace loupe::library
