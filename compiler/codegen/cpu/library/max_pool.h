// 2-D max pooling with indices, and its backward, over the last two dims with every leading dim
// flattened into planes; indices are the flat h * W + w position in the plane, as torch's. The
// forward walks each output row once per window tap, over the whole run of outputs whose tap
// lies inside the input, so the inner loop is a branch-free select the compiler vectorises
// (for AVX2 where the machine has it); rows are split across the library threads. oneDNN's pooling
// was not taken: its workspace is not torch's indices (docs/cpu-codegen.md, "Library kernels").
#pragma once

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "compiler/codegen/cpu/library/parallel_ranges.h"
#include "compiler/codegen/cpu/library/pool_geometry.h"
#include "compiler/codegen/cpu/library/vector_clones.h"
#include "compiler/ir/attribute.h"
#include "compiler/tensor/tensor.h"

namespace loupe::library {

// Output rows [firstRow, lastRow) of every plane's rows in order; AVX2 where the machine has it
// (vector_clones.h). Without `kIndices` only the maxima are written (nothing reads the indices:
// an inference graph), which drops the index select and a third of the bytes written in f32.
template <typename T, bool kIndices>
LOUPE_VECTOR_CLONES void maxPoolRows(const PoolGeometry& g, const T* input, T* out,
                                     int64_t* indices, int64_t firstRow, int64_t lastRow) {
  int64_t sh = g.stride[0], sw = g.stride[1];
  for (int64_t row = firstRow; row < lastRow; ++row) {
    int64_t plane = row / g.outH, oh = row % g.outH;
    const T* planeInput = input + plane * g.inH * g.inW;
    T* best = out + row * g.outW;
    int64_t* bestIndex = kIndices ? indices + row * g.outW : nullptr;
    // torch starts every window at its first tap inside the input with -inf, so an all -inf
    // window reports that tap, and keeps the first maximum while letting NaN win.
    int64_t windowRow = firstInside(oh * sh - g.padding[0], g.dilation[0]);
    for (int64_t ow = 0; ow < g.outW; ++ow) {
      best[ow] = -std::numeric_limits<T>::infinity();
      if constexpr (kIndices)
        bestIndex[ow] = windowRow * g.inW + firstInside(ow * sw - g.padding[1], g.dilation[1]);
    }
    for (int64_t ki = 0; ki < g.kernel[0]; ++ki) {
      int64_t ih = oh * sh - g.padding[0] + ki * g.dilation[0];
      if (ih < 0 || ih >= g.inH) continue;
      for (int64_t kj = 0; kj < g.kernel[1]; ++kj) {
        int64_t offset = kj * g.dilation[1] - g.padding[1];
        auto [first, last] = PoolGeometry::inside(offset, sw, g.inW, g.outW);
        const T* tap = planeInput + ih * g.inW + offset;
        int64_t tapIndex = ih * g.inW + offset;
#pragma omp simd
        for (int64_t ow = first; ow < last; ++ow) {
          T v = tap[ow * sw];
          bool take = v > best[ow] || v != v;
          best[ow] = take ? v : best[ow];
          if constexpr (kIndices) bestIndex[ow] = take ? tapIndex + ow * sw : bestIndex[ow];
        }
      }
    }
  }
}

// `withIndices` false: the indices output is left as it is (nothing reads it).
template <typename T>
void maxPool2d(const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
               std::vector<Tensor>& outputs, bool withIndices) {
  Tensor x = inputs[0]->contiguous();
  PoolGeometry g(x, outputs[0], attrs);
  int64_t rows = g.planes * g.outH;
  parallelRanges(parallelParts(rows, g.outW * g.kernel[0] * g.kernel[1]), rows,
                 [&](int, int64_t first, int64_t last) {
                   if (withIndices)
                     maxPoolRows<T, true>(g, x.dataAs<T>(), outputs[0].dataAs<T>(),
                                          outputs[1].dataAs<int64_t>(), first, last);
                   else
                     maxPoolRows<T, false>(g, x.dataAs<T>(), outputs[0].dataAs<T>(), nullptr, first,
                                           last);
                 });
}

template <typename T>
void maxPool2d(const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
               std::vector<Tensor>& outputs) {
  maxPool2d<T>(inputs, attrs, outputs, true);
}

// Each output's gradient goes to the input position its index names; planes are independent,
// so they are split across the library threads.
template <typename T>
void maxPool2dBackward(const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
                       std::vector<Tensor>& outputs) {
  Tensor gradOut = inputs[0]->contiguous(), indices = inputs[2]->contiguous();
  PoolGeometry g(*inputs[1], gradOut, attrs);
  T* gradIn = outputs[0].dataAs<T>();
  const T* grad = gradOut.dataAs<T>();
  const auto* index = indices.dataAs<int64_t>();
  int64_t pooled = g.outH * g.outW, plane = g.inH * g.inW;
  parallelRanges(parallelParts(g.planes, plane + pooled), g.planes,
                 [&](int, int64_t first, int64_t last) {
                   // Each plane is zeroed just before its scatter, while it is in cache.
                   for (int64_t p = first; p < last; ++p) {
                     T* planeGrad = gradIn + p * plane;
                     std::fill(planeGrad, planeGrad + plane, T(0));
                     for (int64_t o = p * pooled; o < (p + 1) * pooled; ++o)
                       planeGrad[index[o]] += grad[o];
                   }
                 });
}

} // namespace loupe::library
