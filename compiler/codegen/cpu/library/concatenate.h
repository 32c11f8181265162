// aten.cat as copies in the tensors' own dtype: each input fills its slab of the contiguous
// result, one memcpy per leading index when the input is contiguous too.
#pragma once

#include <cstring>
#include <vector>

#include "compiler/ir/attribute.h"
#include "compiler/tensor/tensor.h"

namespace loupe::library {

inline void concatenate(const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
                        Tensor& out) {
  // torch still accepts (and skips) legacy empty 1-d tensors among cat's inputs.
  auto skipped = [](const Tensor& t) { return t.rank() == 1 && t.size(0) == 0; };
  if (skipped(out)) return;
  int64_t rank = static_cast<int64_t>(out.rank()), d = attrs.getInt("dim", 0);
  if (d < 0) d += rank;
  auto dim = static_cast<size_t>(d);
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < dim; ++i)
    outer *= out.size(i);
  for (size_t i = dim + 1; i < out.rank(); ++i)
    inner *= out.size(i);
  size_t element = dtypeSize(out.dtype());
  auto* dst = static_cast<char*>(out.data());
  int64_t outSlab = out.size(dim) * inner, start = 0;
  for (const Tensor* in : inputs) {
    if (skipped(*in)) continue;
    int64_t slab = in->size(dim) * inner;
    if (in->isContiguous()) {
      const auto* src = static_cast<const char*>(in->data());
      for (int64_t o = 0; o < outer; ++o)
        std::memcpy(dst + static_cast<size_t>(o * outSlab + start) * element,
                    src + static_cast<size_t>(o * slab) * element,
                    static_cast<size_t>(slab) * element);
    } else {
      std::vector<int64_t> strides = out.strides();
      out.view(in->shape(), strides, out.offset() + start).copyFrom(*in);
    }
    start += slab;
  }
}

} // namespace loupe::library
