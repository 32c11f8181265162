// Training dropout's masks (aten.native_dropout), shared by its reference and its library kernel
// so that both draw the same masks.
//
// Counter-based: element i of a draw that starts at position s of a process-wide stream is kept
// when uniform(s + i) >= p, where uniform(k) is the top 24 bits of a 32-bit hash of k, as a
// fraction of 2^24. Kept elements are multiplied by 1 / (1 - p) rounded to the input's dtype,
// dropped ones by 0 (so an infinite or NaN input gives NaN either way), as torch computes
// `input * mask * scale`. A draw reserves its positions atomically, so every call draws a fresh
// mask (graphs running at once never share positions), a process's masks are reproducible given the
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

// A 32-bit integer hash (Wellons' "triple32": three multiply-xorshift rounds), in 32-bit lanes so
// that the kernel's loop vectorises (a 64-bit hash's multiplies have no vector instruction before
// AVX-512). The two-round "lowbias32" was tried first: over 2^26 consecutive positions at
// p = 0.9, the masks of elements 1024 and 4096 apart were correlated (13 and 10 standard errors
// from independent), where triple32's stayed within 2 at every stride tried (1 to 65536).
inline uint32_t dropoutMix32(uint32_t x) {
  x ^= x >> 17;
  x *= 0xed5ad4bbU;
  x ^= x >> 11;
  x *= 0xac4c1b51U;
  x ^= x >> 15;
  x *= 0x31848babU;
  x ^= x >> 14;
  return x;
}

// Position k of the stream as 32-bit words: its high word's hash (the same for 2^32 positions,
// so the kernel computes it once per run of them) is xor-ed into its low word before the hash.
inline uint32_t dropoutHighKey(uint64_t k) {
  return dropoutMix32(static_cast<uint32_t>(k >> 32) + 0x9E3779B9U);
}

// uniform(k) as 24 bits, the precision of torch's float uniform draws: keep when
// dropoutHash24(k) >= dropoutThreshold(p).
inline uint32_t dropoutHash24(uint32_t lowWord, uint32_t highKey) {
  return dropoutMix32(lowWord ^ highKey) >> 8;
}

// The 24-bit value a uniform(k) >= p compares against: 0 keeps everything, 2^24 nothing.
inline uint32_t dropoutThreshold(double p) {
  if (!(p > 0)) return 0;
  if (p >= 1) return uint32_t(1) << 24;
  return static_cast<uint32_t>(std::ceil(std::ldexp(p, 24)));
}

inline bool dropoutKeeps(uint64_t position, uint32_t threshold) {
  return dropoutHash24(static_cast<uint32_t>(position), dropoutHighKey(position)) >= threshold;
}

} // namespace loupe
