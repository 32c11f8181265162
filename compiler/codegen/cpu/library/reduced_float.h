// Library kernels on bf16 and f16 tensors: the operands widened to f32, the f32 kernel run, its
// results rounded back (to nearest even, as torch rounds). torch's own CPU kernels for these
// dtypes accumulate in f32 too (its matmuls, norms and softmax), so the results agree within a
// rounding of the dtype. Before, every library op in a reduced float ran the registry's
// reference loop in double: a bf16 MLP block took 684 ms a call against eager's 0.82
// (docs/cpu-codegen.md, "Library kernels").
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "compiler/codegen/cpu/library/parallel_ranges.h"
#include "compiler/codegen/cpu/library/vector_clones.h"
#include "compiler/ir/dtype.h"
#include "compiler/tensor/tensor.h"

namespace loupe::library {

// bf16 is an f32's upper half: widening is a shift; narrowing rounds to nearest even and keeps a
// NaN a (quiet) NaN, as floatToBfloat16 does.
LOUPE_VECTOR_CLONES inline void widenBfloat16(const uint16_t* from, float* to, int64_t count) {
#pragma omp simd
  for (int64_t i = 0; i < count; ++i) {
    uint32_t bits = static_cast<uint32_t>(from[i]) << 16;
    std::memcpy(&to[i], &bits, sizeof bits);
  }
}

LOUPE_VECTOR_CLONES inline void narrowToBfloat16(const float* from, uint16_t* to, int64_t count) {
#pragma omp simd
  for (int64_t i = 0; i < count; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &from[i], sizeof bits);
    uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
    uint32_t nan = (bits >> 16) | 0x40u;
    to[i] = static_cast<uint16_t>((bits & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
  }
}

// Whether `t`'s elements fill numel() consecutive places in some order of its dims (a transposed
// weight, a permuted activation): then its memory converts as one run, and the copy keeps its
// strides, so a BLAS call still reads it as a transpose instead of a packed copy.
inline bool isDenseInSomeOrder(const Tensor& t) {
  std::vector<std::pair<int64_t, int64_t>> dims; // (stride, size) of the dims of size > 1
  for (size_t d = 0; d < t.rank(); ++d)
    if (t.size(d) != 1) dims.push_back({t.strides()[d], t.size(d)});
  std::sort(dims.begin(), dims.end());
  int64_t expected = 1;
  for (const auto& [stride, size] : dims) {
    if (stride != expected) return false;
    expected *= size;
  }
  return true;
}

// An f32 copy of a bf16 or f16 tensor: with its strides where its elements are dense in some
// order, else contiguous.
inline Tensor widenedToF32(const Tensor& tensor) {
  bool dense = isDenseInSomeOrder(tensor);
  Tensor packed = dense ? tensor : tensor.contiguous();
  Tensor block = Tensor::empty(DType::F32, {packed.numel()});
  Tensor wide = block.view(packed.shape(), packed.strides(), 0); // packed's layout, in f32
  const auto* from = packed.dataAs<uint16_t>();
  float* to = block.dataAs<float>();
  bool bf16 = packed.dtype() == DType::BF16;
  int64_t count = packed.numel();
  parallelRanges(parallelParts(count, 1), count, [&](int, int64_t first, int64_t last) {
    if (bf16) return widenBfloat16(from + first, to + first, last - first);
    for (int64_t i = first; i < last; ++i)
      to[i] = halfToFloat(from[i]);
  });
  return wide;
}

// `out` (bf16 or f16, contiguous, as library kernels' results are) = `wide` rounded.
inline void narrowInto(const Tensor& wide, Tensor& out) {
  const float* from = wide.dataAs<float>();
  auto* to = out.dataAs<uint16_t>();
  bool bf16 = out.dtype() == DType::BF16;
  int64_t count = out.numel();
  parallelRanges(parallelParts(count, 1), count, [&](int, int64_t first, int64_t last) {
    if (bf16) return narrowToBfloat16(from + first, to + first, last - first);
    for (int64_t i = first; i < last; ++i)
      to[i] = floatToHalf(from[i]);
  });
}

} // namespace loupe::library
