// A 2-D pooling window's geometry for the pooling library kernels (max_pool.h, avg_pool.h):
// the window as the op's attributes give it, the sizes from the input and the output, every
// leading dim flattened into planes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "compiler/codegen/cpu/library/convolution_geometry.h"
#include "compiler/ir/attribute.h"
#include "compiler/tensor/tensor.h"

namespace loupe::library {

// Window parameters as the op's attributes (stride defaults to the kernel, padding to 0,
// dilation to 1); sizes from the input and the output (or its gradient).
struct PoolGeometry {
  int64_t planes, inH, inW, outH, outW;
  std::vector<int64_t> kernel, stride, padding, dilation;

  PoolGeometry(const Tensor& input, const Tensor& output, const AttrMap& attrs)
      : inH(input.size(input.rank() - 2)), inW(input.size(input.rank() - 1)),
        outH(output.size(output.rank() - 2)), outW(output.size(output.rank() - 1)),
        kernel(attrPair(attrs, "kernel_size")),
        stride(attrs.isNone("stride") || attrs.getInts("stride").empty()
                   ? kernel
                   : attrPair(attrs, "stride")),
        padding(attrs.isNone("padding") ? std::vector<int64_t>{0, 0} : attrPair(attrs, "padding")),
        dilation(attrs.isNone("dilation") ? std::vector<int64_t>{1, 1}
                                          : attrPair(attrs, "dilation")) {
    planes = inH * inW == 0 ? 0 : input.numel() / (inH * inW);
  }

  // The outputs [first, last) of a row (or column) whose tap at `offset` from the window's start
  // (tap * dilation - padding) falls inside an input extent of `size`.
  static std::pair<int64_t, int64_t> inside(int64_t offset, int64_t stride, int64_t size,
                                            int64_t outputs) {
    auto ceilDiv = [](int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -(-a / b); };
    int64_t first = std::max<int64_t>(ceilDiv(-offset, stride), 0);
    int64_t last = size - 1 - offset < 0 ? 0 : (size - 1 - offset) / stride + 1;
    return {first, std::max(first, std::min(last, outputs))};
  }
};

// The first tap of a window starting at `start` (negative in the padding) that is not before
// the input's start.
inline int64_t firstInside(int64_t start, int64_t dilation) {
  return start >= 0 ? start : start + (-start + dilation - 1) / dilation * dilation;
}

} // namespace loupe::library
