// A depthwise 2-D convolution (one input channel per group: MobileNet's and ConvNeXt's spatial
// filters), forward, in NCHW: each output plane is its input plane's taps weighted and summed.
// Per output row and tap, the run of outputs whose tap lies inside the input is one vector
// multiply-add, as pooling walks its windows (max_pool.h); rows are split across the library
// threads, compiled for AVX2 too. oneDNN computes it in channel blocks, reordering the input and
// the result each way: 1.7x torch's time at [16,64,56,56] (docs/cpu-codegen.md, "Library
// kernels").
#pragma once

#include <algorithm>
#include <vector>

#include "compiler/codegen/cpu/library/convolution_geometry.h"
#include "compiler/codegen/cpu/library/parallel_ranges.h"
#include "compiler/codegen/cpu/library/pool_geometry.h"
#include "compiler/codegen/cpu/library/vector_clones.h"
#include "compiler/tensor/tensor.h"

namespace loupe::library {

// One input channel per group (`groupChannels`, the weight's second dim): each output channel
// filters exactly one input plane. Kernel selection asks it of a node's static sizes.
inline bool isDepthwise(int64_t channels, int64_t groupChannels, int64_t groups) {
  return groupChannels == 1 && groups == channels && groups > 1;
}

inline bool isDepthwiseConvolution(const Conv2dGeometry& g) {
  return isDepthwise(g.channels, g.groupChannels, g.groups);
}

// Output rows [firstRow, lastRow) over every output plane's rows in order.
template <typename T>
LOUPE_VECTOR_CLONES void depthwiseRows(const Conv2dGeometry& g, const T* input, const T* weight,
                                       const T* bias, T* out, int64_t firstRow, int64_t lastRow) {
  int64_t sh = g.stride[0], sw = g.stride[1];
  int64_t multiplier = g.groupFilters(); // output channels per input channel
  for (int64_t row = firstRow; row < lastRow; ++row) {
    int64_t plane = row / g.outH, oh = row % g.outH;
    int64_t n = plane / g.filters, f = plane % g.filters;
    const T* in = input + (n * g.channels + f / multiplier) * g.height * g.width;
    const T* w = weight + f * g.kh * g.kw;
    T* o = out + row * g.outW;
    std::fill(o, o + g.outW, bias ? bias[f] : T(0));
    for (int64_t ki = 0; ki < g.kh; ++ki) {
      int64_t ih = oh * sh - g.padding[0] + ki * g.dilation[0];
      if (ih < 0 || ih >= g.height) continue;
      for (int64_t kj = 0; kj < g.kw; ++kj) {
        int64_t offset = kj * g.dilation[1] - g.padding[1];
        auto [first, last] = PoolGeometry::inside(offset, sw, g.width, g.outW);
        const T* tap = in + ih * g.width + offset;
        T tapWeight = w[ki * g.kw + kj];
#pragma omp simd
        for (int64_t ow = first; ow < last; ++ow)
          o[ow] += tapWeight * tap[ow * sw];
      }
    }
  }
}

template <typename T>
void depthwiseConvolution(const Conv2dGeometry& g, const Tensor& input, const Tensor& weight,
                          const Tensor* bias, Tensor& out) {
  Tensor x = input.contiguous(), w = weight.contiguous();
  Tensor b = bias ? bias->contiguous() : Tensor();
  int64_t rows = g.batch * g.filters * g.outH;
  parallelRanges(parallelParts(rows, g.outW * g.kh * g.kw), rows,
                 [&](int, int64_t first, int64_t last) {
                   depthwiseRows<T>(g, x.dataAs<T>(), w.dataAs<T>(), bias ? b.dataAs<T>() : nullptr,
                                    out.dataAs<T>(), first, last);
                 });
}

} // namespace loupe::library
