// The sizes and window of a 2-D convolution, as its attributes and operand shapes give them:
// what both convolution kernels (im2col_convolution.h, onednn_convolution.h) work from.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/ir/attribute.h"
#include "compiler/tensor/tensor.h"

namespace loupe::library {

// A 2-D window attribute: torch accepts one value for both dims.
inline std::vector<int64_t> attrPair(const AttrMap& attrs, const char* name) {
  std::vector<int64_t> values = attrs.getInts(name);
  if (values.size() == 1) values.push_back(values[0]);
  return values;
}

// `output` is the convolution's result (or the gradient of it).
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
        stride(attrPair(attrs, "stride")), padding(attrPair(attrs, "padding")),
        dilation(attrPair(attrs, "dilation")), groups(attrs.getInt("groups", 1)) {}

  int64_t pixels() const { return outH * outW; }
  int64_t patch() const { return groupChannels * kh * kw; }
  int64_t groupFilters() const { return filters / groups; }
};

} // namespace loupe::library
