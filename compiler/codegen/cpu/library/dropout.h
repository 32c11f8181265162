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
#include "compiler/codegen/cpu/library/vector_clones.h"
#include "compiler/ir/attribute.h"
#include "compiler/ops/dropout_mask.h"
#include "compiler/tensor/tensor.h"

namespace loupe::library {

// Positions [lo, lo + count) of the stream, all in one run of 2^32 (the same high word): a
// select-free loop of 32-bit integer lanes, which GCC vectorises (a branch on the mask, or a
// 64-bit hash, kept it scalar: 2.6 ms per million elements, against 0.41 for AVX2 and 0.26 for
// AVX-512 on the development machine, one thread).
template <typename T>
LOUPE_VECTOR_CLONES void dropoutRun(const T* __restrict input, T* __restrict out,
                                    uint8_t* __restrict mask, int64_t count, uint32_t lo,
                                    uint32_t highKey, uint32_t threshold, T scale) {
#pragma omp simd
  for (int64_t i = 0; i < count; ++i) {
    // Both sides below 2^25: a signed compare, which AVX2 has.
    int32_t hash = static_cast<int32_t>(dropoutHash24(lo + static_cast<uint32_t>(i), highKey));
    int32_t keep = hash >= static_cast<int32_t>(threshold);
    out[i] = input[i] * (scale * static_cast<T>(keep));
    mask[i] = static_cast<uint8_t>(keep);
  }
}

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
  const uint32_t threshold = dropoutThreshold(p);
  const T scale = static_cast<T>(1 / (1 - p)); // what the reference multiplies by
  parallelRanges(parallelParts(count, 8), count, [&](int, int64_t begin, int64_t end) {
    // Split where the position's high word changes (at most once per range, in practice never).
    while (begin < end) {
      const uint64_t position = first + static_cast<uint64_t>(begin);
      const uint64_t toNextHighWord = (uint64_t(1) << 32) - (position & 0xFFFFFFFFull);
      const int64_t run = static_cast<int64_t>(
          std::min<uint64_t>(toNextHighWord, static_cast<uint64_t>(end - begin)));
      dropoutRun<T>(input + begin, out + begin, mask + begin, run, static_cast<uint32_t>(position),
                    dropoutHighKey(position), threshold, scale);
      begin += run;
    }
  });
}

} // namespace loupe::library
