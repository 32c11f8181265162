// Training dropout's masks (aten.native_dropout), shared by its reference and its library kernel
// so that both draw the same masks.
//
// Counter-based: element i of a draw that starts at position s of a process-wide stream is kept
// when uniform(s + i) >= p, where uniform(k) is the top 53 bits of a SplitMix64 hash of k, as a
// fraction of 2^53. A draw reserves its positions atomically, so every call draws a fresh mask
// (graphs running at once never share positions), a process's masks are reproducible given the
// order of its draws, and a mask does not depend on how many threads compute it. The masks are
// not torch's (another generator); the backend's dropout_rng option "torch" gets torch's.
#pragma once

#include <cmath>
#include <cstdint>

namespace loupe {

// Reserves `count` positions of the stream; returns the first.
uint64_t reserveDropoutDraws(uint64_t count);

// Moves the stream to `position` (tests replay a draw with it).
void resetDropoutDraws(uint64_t position);

// The 53-bit value a uniform(k) >= p compares against: keep when hash53(k) >= threshold.
inline uint64_t dropoutThreshold(double p) {
  if (!(p > 0)) return 0;
  if (p >= 1) return uint64_t(1) << 53;
  return static_cast<uint64_t>(std::ceil(std::ldexp(p, 53)));
}

// SplitMix64's finaliser over position k of the stream, its top 53 bits.
inline uint64_t dropoutHash53(uint64_t k) {
  uint64_t z = (k + 1) * 0x9E3779B97F4A7C15ull + 0x5eedull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return (z ^ (z >> 31)) >> 11;
}

inline bool dropoutKeeps(uint64_t position, uint64_t threshold) {
  return dropoutHash53(position) >= threshold;
}

} // namespace loupe
