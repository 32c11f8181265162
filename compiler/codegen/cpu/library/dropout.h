// Training dropout (aten.native_dropout): the masks of its reference (compiler/ops/dropout_mask.h),
// drawn in parallel: element i's mask is a hash of its stream position, so the elements are
// split across the library threads and the mask is the same at any thread count. The reference
// draws element by element through the generic tensor accessors, several hundred times slower on
// a transformer's activations.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "compiler/codegen/cpu/library/parallel_ranges.h"
#include "compiler/ir/attribute.h"
#include "compiler/ops/dropout_mask.h"
#include "compiler/tensor/tensor.h"

namespace loupe::library {

// outputs: the input with dropped elements zeroed and the rest scaled by 1 / (1 - p), and the
// mask of kept elements (bool, one byte each).
template <typename T>
void dropout(const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
             std::vector<Tensor>& outputs) {
  const double p = attrs.getFloat("p");
  const bool train = attrs.isNone("train") || attrs.getBool("train"); // absent: training
  Tensor x = inputs[0]->contiguous();
  const int64_t count = x.numel();
  const T* input = x.dataAs<T>();
  T* out = outputs[0].dataAs<T>();
  auto* mask = outputs[1].dataAs<uint8_t>();
  if (!train) { // dropout off: the input as it is, every element kept
    std::copy(input, input + count, out);
    std::fill(mask, mask + count, uint8_t(1));
    return;
  }
  const uint64_t first = reserveDropoutDraws(static_cast<uint64_t>(count));
  const uint64_t threshold = dropoutThreshold(p);
  const double kept = 1.0 - p; // divided by in double, as the reference does
  parallelRanges(parallelParts(count, 8), count, [&](int, int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      bool keep = dropoutKeeps(first + static_cast<uint64_t>(i), threshold);
      out[i] = keep ? static_cast<T>(static_cast<double>(input[i]) / kept) : T(0);
      mask[i] = keep;
    }
  });
}

} // namespace loupe::library
