// 2-D average pooling and adaptive average pooling, and their backward ops, over the last two
// dims with every leading dim flattened into planes, with the windows and divisors of their
// references (compiler/ops/pool_windows.h). The forward walks each output row once per
// window tap, over the run of outputs whose tap lies inside the input, as max pooling does
// (max_pool.h), so the inner loop is a sum the compiler vectorises; the backward spreads each
// output's share over its window the same way. Planes are split across the library threads (a
// backward's windows overlap within a plane, never across planes).
#pragma once

#include <algorithm>
#include <optional>
#include <vector>

#include "compiler/codegen/cpu/library/parallel_ranges.h"
#include "compiler/codegen/cpu/library/pool_geometry.h"
#include "compiler/codegen/cpu/library/vector_clones.h"
#include "compiler/ir/attribute.h"
#include "compiler/ops/pool_windows.h"
#include "compiler/tensor/tensor.h"

namespace loupe::library {

// What an average is divided by, per the op's attributes.
struct AverageDivisor {
  bool countIncludePad;
  std::optional<int64_t> override;

  explicit AverageDivisor(const AttrMap& attrs)
      : countIncludePad(attrs.getBool("count_include_pad", true)) {
    if (!attrs.isNone("divisor_override")) override = attrs.getInt("divisor_override");
  }

  // The factor an output's window sum is scaled by: 0 for a window with no input element
  // (torch writes 0 there).
  template <typename T>
  T scale(const AverageWindow& h, const AverageWindow& w) const {
    if (h.empty() || w.empty()) return T(0);
    return T(1) / T(averageDivisor(h, w, countIncludePad, override));
  }
};

// The factors of one output row's window sums, in scratch of outW elements. A row's factors
// depend on its window only through the window's clipped and padded heights, so they are worked
// out again only when those change (at padded edges), not for every row: a division per output
// cost more than a 2x2 window's sums.
template <typename T>
class RowScales {
public:
  RowScales(const PoolGeometry& g, const AverageDivisor& divisor, T* scratch)
      : g_(g), divisor_(divisor), scales_(scratch) {}

  const T* of(const AverageWindow& h) {
    if (h.last - h.first != count_ || h.padded != padded_) {
      count_ = h.last - h.first, padded_ = h.padded;
      for (int64_t ow = 0; ow < g_.outW; ++ow)
        scales_[ow] = divisor_.scale<T>(
            h, averageWindow(ow, g_.kernel[1], g_.stride[1], g_.padding[1], g_.inW));
    }
    return scales_;
  }

private:
  const PoolGeometry& g_;
  const AverageDivisor& divisor_;
  T* scales_;
  int64_t count_ = -1, padded_ = -1;
};

// Output rows [firstRow, lastRow) of every plane's rows in order, into `out`; `rowScale` is
// scratch of outW elements.
template <typename T>
LOUPE_VECTOR_CLONES void averagePoolRows(const PoolGeometry& g, const AverageDivisor& divisor,
                                         const T* input, T* out, T* rowScale, int64_t firstRow,
                                         int64_t lastRow) {
  int64_t sh = g.stride[0], sw = g.stride[1];
  RowScales<T> scales(g, divisor, rowScale);
  for (int64_t row = firstRow; row < lastRow; ++row) {
    int64_t plane = row / g.outH, oh = row % g.outH;
    const T* planeInput = input + plane * g.inH * g.inW;
    T* sum = out + row * g.outW;
    AverageWindow h = averageWindow(oh, g.kernel[0], sh, g.padding[0], g.inH);
    const T* scale = scales.of(h);
#pragma omp simd
    for (int64_t ow = 0; ow < g.outW; ++ow)
      sum[ow] = T(0);
    for (int64_t ih = h.first; ih < h.last; ++ih)
      for (int64_t kj = 0; kj < g.kernel[1]; ++kj) {
        int64_t offset = kj - g.padding[1];
        auto [first, last] = PoolGeometry::inside(offset, sw, g.inW, g.outW);
        const T* tap = planeInput + ih * g.inW + offset;
#pragma omp simd
        for (int64_t ow = first; ow < last; ++ow)
          sum[ow] += tap[ow * sw];
      }
#pragma omp simd
    for (int64_t ow = 0; ow < g.outW; ++ow)
      sum[ow] *= scale[ow];
  }
}

template <typename T>
void avgPool2d(const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
               std::vector<Tensor>& outputs) {
  Tensor x = inputs[0]->contiguous();
  PoolGeometry g(x, outputs[0], attrs);
  AverageDivisor divisor(attrs);
  int64_t rows = g.planes * g.outH;
  int parts = parallelParts(rows, g.outW * g.kernel[0] * g.kernel[1]);
  std::vector<T> scales(static_cast<size_t>(parts * g.outW));
  parallelRanges(parts, rows, [&](int part, int64_t first, int64_t last) {
    averagePoolRows<T>(g, divisor, x.dataAs<T>(), outputs[0].dataAs<T>(),
                       scales.data() + part * g.outW, first, last);
  });
}

// One plane's input gradient: zeroed, then each output's gradient times its scale added over
// its window, tap by tap. `share` and `rowScale` are scratch of outW elements each.
template <typename T>
LOUPE_VECTOR_CLONES void averagePoolBackwardPlane(const PoolGeometry& g,
                                                  const AverageDivisor& divisor, const T* grad,
                                                  T* planeGrad, T* share, T* rowScale) {
  int64_t sh = g.stride[0], sw = g.stride[1];
  std::fill(planeGrad, planeGrad + g.inH * g.inW, T(0));
  RowScales<T> scales(g, divisor, rowScale);
  for (int64_t oh = 0; oh < g.outH; ++oh) {
    AverageWindow h = averageWindow(oh, g.kernel[0], sh, g.padding[0], g.inH);
    const T* scale = scales.of(h);
#pragma omp simd
    for (int64_t ow = 0; ow < g.outW; ++ow)
      share[ow] = grad[oh * g.outW + ow] * scale[ow];
    for (int64_t ih = h.first; ih < h.last; ++ih)
      for (int64_t kj = 0; kj < g.kernel[1]; ++kj) {
        int64_t offset = kj - g.padding[1];
        auto [first, last] = PoolGeometry::inside(offset, sw, g.inW, g.outW);
        T* tap = planeGrad + ih * g.inW + offset;
        // Distinct outputs of one tap land on distinct inputs (stride >= 1): no conflicts.
#pragma omp simd
        for (int64_t ow = first; ow < last; ++ow)
          tap[ow * sw] += share[ow];
      }
  }
}

// inputs: grad_output, self.
template <typename T>
void avgPool2dBackward(const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
                       std::vector<Tensor>& outputs) {
  Tensor gradOut = inputs[0]->contiguous();
  PoolGeometry g(*inputs[1], gradOut, attrs);
  AverageDivisor divisor(attrs);
  int parts = parallelParts(g.planes, g.inH * g.inW + g.outH * g.outW * g.kernel[0] * g.kernel[1]);
  std::vector<T> shares(static_cast<size_t>(parts * 2 * g.outW)); // share, then scales
  int64_t pooled = g.outH * g.outW, plane = g.inH * g.inW;
  parallelRanges(parts, g.planes, [&](int part, int64_t first, int64_t last) {
    for (int64_t p = first; p < last; ++p)
      averagePoolBackwardPlane<T>(
          g, divisor, gradOut.dataAs<T>() + p * pooled, outputs[0].dataAs<T>() + p * plane,
          shares.data() + part * 2 * g.outW, shares.data() + part * 2 * g.outW + g.outW);
  });
}

// Sizes of adaptive pooling: planes of in x in to out x out; from the input (or its gradient's
// operand `self`) and the output (or the gradient of it).
struct AdaptivePlanes {
  int64_t planes, inH, inW, outH, outW;
  AdaptivePlanes(const Tensor& input, const Tensor& output)
      : inH(input.size(input.rank() - 2)), inW(input.size(input.rank() - 1)),
        outH(output.size(output.rank() - 2)), outW(output.size(output.rank() - 1)) {
    planes = inH * inW == 0 ? 0 : input.numel() / (inH * inW);
  }
};

template <typename T>
void adaptiveAvgPool2d(const std::vector<const Tensor*>& inputs, const AttrMap&,
                       std::vector<Tensor>& outputs) {
  Tensor x = inputs[0]->contiguous();
  AdaptivePlanes g(x, outputs[0]);
  const T* input = x.dataAs<T>();
  T* out = outputs[0].dataAs<T>();
  parallelRanges(parallelParts(g.planes, g.inH * g.inW), g.planes,
                 [&](int, int64_t first, int64_t last) {
                   for (int64_t p = first; p < last; ++p)
                     for (int64_t oh = 0; oh < g.outH; ++oh) {
                       auto [h0, h1] = adaptiveCell(oh, g.inH, g.outH);
                       for (int64_t ow = 0; ow < g.outW; ++ow) {
                         auto [w0, w1] = adaptiveCell(ow, g.inW, g.outW);
                         T sum = 0;
                         for (int64_t ih = h0; ih < h1; ++ih) {
                           const T* row = input + (p * g.inH + ih) * g.inW;
#pragma omp simd reduction(+ : sum)
                           for (int64_t iw = w0; iw < w1; ++iw)
                             sum += row[iw];
                         }
                         out[(p * g.outH + oh) * g.outW + ow] = sum / T((h1 - h0) * (w1 - w0));
                       }
                     }
                 });
}

// inputs: grad_output, self.
template <typename T>
void adaptiveAvgPool2dBackward(const std::vector<const Tensor*>& inputs, const AttrMap&,
                               std::vector<Tensor>& outputs) {
  Tensor gradOut = inputs[0]->contiguous();
  AdaptivePlanes g(*inputs[1], gradOut);
  const T* grad = gradOut.dataAs<T>();
  T* gradIn = outputs[0].dataAs<T>();
  parallelRanges(parallelParts(g.planes, g.inH * g.inW), g.planes,
                 [&](int, int64_t first, int64_t last) {
                   for (int64_t p = first; p < last; ++p) {
                     T* plane = gradIn + p * g.inH * g.inW;
                     std::fill(plane, plane + g.inH * g.inW, T(0));
                     for (int64_t oh = 0; oh < g.outH; ++oh) {
                       auto [h0, h1] = adaptiveCell(oh, g.inH, g.outH);
                       for (int64_t ow = 0; ow < g.outW; ++ow) {
                         auto [w0, w1] = adaptiveCell(ow, g.inW, g.outW);
                         T share = grad[(p * g.outH + oh) * g.outW + ow] / T((h1 - h0) * (w1 - w0));
                         for (int64_t ih = h0; ih < h1; ++ih) {
                           T* row = plane + ih * g.inW;
#pragma omp simd
                           for (int64_t iw = w0; iw < w1; ++iw)
                             row[iw] += share;
                         }
                       }
                     }
                   }
                 });
}

} // namespace loupe::library
