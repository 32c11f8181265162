// Loops of the hand-written library kernels split across the library threads: one contiguous
// range of items per thread, on OpenMP's pool (the generated kernels' and, inside torch, torch's
// intra-op threads; parallel_gemm.h), as many threads as a BLAS product uses.
#pragma once

#include <cstdint>

#include "compiler/codegen/cpu/library/parallel_gemm.h"

namespace loupe::library {

// How many ranges `count` items, each touching `cost` elements, are split into: one per library
// thread (gemmThreads()) when there is enough work to pay for waking them, else one.
inline int parallelParts(int64_t count, int64_t cost) {
  constexpr int64_t kMinParallelWork = 1 << 15;
  return count * cost >= kMinParallelWork ? gemmThreads() : 1;
}

// body(part, first, last) for each of `parts` nearly equal ranges [first, last) of [0, count),
// each on its own thread.
template <typename Body>
void parallelRanges(int parts, int64_t count, Body body) {
#pragma omp parallel for num_threads(parts) schedule(static, 1) if (parts > 1)
  for (int part = 0; part < parts; ++part)
    body(part, count * part / parts, count * (part + 1) / parts);
}

} // namespace loupe::library
