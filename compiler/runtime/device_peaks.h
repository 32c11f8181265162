// What a device can do at most, and how much of it a profiled kernel reached (docs/profile.md):
// peak memory bandwidth, and peak FLOP/s for fp32 on the ordinary cores and for bf16/fp16 on the
// tensor cores. A kernel's share is the larger of its bandwidth share (bytes / time / peak
// bandwidth) and its compute share (FLOPs / time / peak FLOP/s); which one it is says whether it
// is memory- or compute-bound. On the host no peak is known, so there is no share.
#pragma once

#include <optional>
#include <string>

#include "compiler/ir/dtype.h"
#include "compiler/ops/op_cost.h"

namespace loupe {

struct DevicePeaks {
  double bytesPerSecond = 0;       // 0: unknown
  double fp32FlopsPerSecond = 0;   // without tensor cores
  double tensorFlopsPerSecond = 0; // bf16/fp16 on the tensor cores, dense
  bool known() const { return bytesPerSecond > 0; }
};

// An NVIDIA GPU's peaks from what its driver reports: bandwidth = memory clock x bus width x 2
// (double data rate); FLOP/s = SMs x SM clock x FLOP per clock per SM, from a small table by
// compute capability (sm_80: 128 fp32, 2048 tensor; sm_90 and later: 256 fp32, 4096 tensor).
// Older devices get a bandwidth but no compute peak.
DevicePeaks cudaDevicePeaks(int computeMajor, int multiprocessors, int clockKHz, int memoryClockKHz,
                            int memoryBusWidthBits);

struct PeakShare {
  double fraction = 0;
  std::string bound; // "memory" or "compute"
};

// The share of `peaks` that `cost` done in `ms` reached; none when the peak is unknown or the
// time is zero. A matrix op (matmul, convolution) in bf16/fp16 is held against the tensor-core
// peak; everything else against fp32 (generated code computes in float).
std::optional<PeakShare> peakShare(const OpCost& cost, double ms, const DevicePeaks& peaks,
                                   DType dtype, bool matrixOp);

} // namespace loupe
