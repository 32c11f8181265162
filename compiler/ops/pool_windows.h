// The windows of 2-D average pooling and adaptive average pooling along one dim, and the divisor
// of an average: the rules torch's kernels follow, shared by the references (pooling.cpp) and
// the CPU library kernels (compiler/codegen/cpu/library/avg_pool.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>

namespace loupe {

// Output `o`'s window: its input positions [first, last) clipped to the input, and its extent
// before that clipping (within the padding: what count_include_pad divides by).
struct AverageWindow {
  int64_t first, last, padded;
  bool empty() const { return first >= last; }
};

inline AverageWindow averageWindow(int64_t o, int64_t kernel, int64_t stride, int64_t padding,
                                   int64_t size) {
  int64_t start = o * stride - padding;
  int64_t end = std::min(start + kernel, size + padding);
  return {std::max<int64_t>(start, 0), std::min(end, size), end - start};
}

// What the sum over windows h x w is divided by: divisor_override, else the padded area with
// count_include_pad, else the clipped one. A window with no input element averages nothing:
// torch writes 0 there, which callers do themselves.
inline int64_t averageDivisor(const AverageWindow& h, const AverageWindow& w, bool countIncludePad,
                              std::optional<int64_t> divisorOverride) {
  if (divisorOverride) return *divisorOverride;
  return countIncludePad ? h.padded * w.padded : (h.last - h.first) * (w.last - w.first);
}

// Adaptive pooling's cell o of n over an extent of `size`: [floor(o*size/n), ceil((o+1)*size/n)).
inline std::pair<int64_t, int64_t> adaptiveCell(int64_t o, int64_t size, int64_t n) {
  return {o * size / n, ((o + 1) * size + n - 1) / n};
}

} // namespace loupe
