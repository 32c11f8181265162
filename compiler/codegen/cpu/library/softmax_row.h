// One row's softmax in place, and its backward, as the attention kernels take them over a block
// of scores: the max, exp(s - max) with its sum, the scaling by the sum's inverse, each a vector
// loop (AVX2 too, vector_clones.h), the sums in the row's precision over the vector's lanes as
// torch's CPU attention sums. In f32 the exp is softmaxExp below, which the loop vectorises; libm's
// expf, a call per element, took half of an attention call's time. f64 calls libm's exp.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "compiler/codegen/cpu/library/vector_clones.h"

namespace loupe::library {

// exp(x) for softmax's shifted scores x <= 0 (larger x are not its domain): Cephes' expf, the
// range reduction x = n ln2 + r with |r| <= ln2 / 2 and a degree-7 polynomial for exp(r) (within
// 2 ulps of libm's expf), 2^n put into the float's exponent bits. Branch-free, so a loop over it
// vectorises. Below -87.3 (past which 2^n would leave the normal range), and at -inf (a masked
// score), it is 0, which is what a sum of weights that includes exp(0) = 1 can resolve; NaN stays
// NaN.
inline float softmaxExp(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2High = 0.693359375f, kLn2Low = -2.12194440e-4f;
  // Adding 1.5 * 2^23 rounds to an integer that lands in the mantissa's low bits.
  constexpr float kRound = 12582912.0f;
  float shifted = x * kLog2e + kRound;
  float n = shifted - kRound;
  float r = x - n * kLn2High - n * kLn2Low;
  // exp(r) = 1 + r + r^2 * P(r), P by Horner's rule written out: a loop over its coefficients
  // kept the caller's loop scalar at -O2.
  float poly = 1.9875691500e-4f;
  poly = poly * r + 1.3981999507e-3f;
  poly = poly * r + 8.3334519073e-3f;
  poly = poly * r + 4.1665795894e-2f;
  poly = poly * r + 1.6666665459e-1f;
  poly = poly * r + 5.0000001201e-1f;
  float expR = poly * r * r + r + 1.0f;
  uint32_t exponent = (std::bit_cast<uint32_t>(shifted) - std::bit_cast<uint32_t>(kRound) + 127u)
                      << 23;
  // All ones where the result stands (NaN included), zeros below the range: a mask rather than
  // a select, which kept GCC from vectorising the loop.
  uint32_t keep = -static_cast<uint32_t>(!(x < -87.3f));
  return std::bit_cast<float>(std::bit_cast<uint32_t>(expR * std::bit_cast<float>(exponent)) &
                              keep);
}

inline double softmaxExp(double x) {
  return std::exp(x);
}

// Softmax of s[0, count) in place; returns the row's logsumexp, or -inf for a row whose scores
// are all -inf (masked), which the caller turns into zero weights.
template <typename T>
LOUPE_VECTOR_CLONES T softmaxRow(T* s, int64_t count) {
  T max = -std::numeric_limits<T>::infinity();
#pragma omp simd reduction(max : max)
  for (int64_t j = 0; j < count; ++j)
    max = s[j] > max ? s[j] : max; // a NaN score is not the max; its weight is NaN
  if (max == -std::numeric_limits<T>::infinity()) return max;
  T sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < count; ++j) {
    T e = softmaxExp(s[j] - max);
    s[j] = e;
    sum += e;
  }
  T inverse = T(1) / sum;
#pragma omp simd
  for (int64_t j = 0; j < count; ++j)
    s[j] *= inverse;
  return max + std::log(sum);
}

// The gradient of a row's scores from that of its weights p, in place of the latter in d:
// d = p * (d - sum(p * d)) * scale.
template <typename T>
LOUPE_VECTOR_CLONES void softmaxBackwardRow(const T* p, T* d, int64_t count, T scale) {
  T dot = 0;
#pragma omp simd reduction(+ : dot)
  for (int64_t j = 0; j < count; ++j)
    dot += p[j] * d[j];
#pragma omp simd
  for (int64_t j = 0; j < count; ++j)
    d[j] = p[j] * (d[j] - dot) * scale;
}

} // namespace loupe::library
