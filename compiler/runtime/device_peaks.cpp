// A device's peaks and a kernel's share of them (device_peaks.h).
#include "compiler/runtime/device_peaks.h"

namespace loupe {

namespace {

// FLOP per clock per SM (a fused multiply-add is two), dense, by compute capability major.
struct ComputeRate {
  int major;
  double fp32;
  double tensor;
};
constexpr ComputeRate kComputeRates[] = {
    {8, 128, 2048}, // A100: 64 fp32 FMA, 1024 bf16/fp16 tensor FMA per clock per SM
    {9, 256, 4096}, // H100: 128 fp32 FMA, 2048 bf16/fp16 tensor FMA per clock per SM
};

} // namespace

DevicePeaks cudaDevicePeaks(int computeMajor, int multiprocessors, int clockKHz, int memoryClockKHz,
                            int memoryBusWidthBits) {
  DevicePeaks peaks;
  peaks.bytesPerSecond = 2.0 * memoryClockKHz * 1e3 * memoryBusWidthBits / 8.0;
  const ComputeRate* rate = nullptr;
  for (const ComputeRate& row : kComputeRates)
    if (computeMajor >= row.major) rate = &row;
  if (rate) {
    double clocksPerSecond = double(multiprocessors) * clockKHz * 1e3;
    peaks.fp32FlopsPerSecond = clocksPerSecond * rate->fp32;
    peaks.tensorFlopsPerSecond = clocksPerSecond * rate->tensor;
  }
  return peaks;
}

std::optional<PeakShare> peakShare(const OpCost& cost, double ms, const DevicePeaks& peaks,
                                   DType dtype, bool matrixOp) {
  if (!peaks.known() || ms <= 0) return std::nullopt;
  double seconds = ms / 1e3;
  bool tensorCores = matrixOp && isReducedFloat(dtype);
  double flopsPeak = tensorCores ? peaks.tensorFlopsPerSecond : peaks.fp32FlopsPerSecond;
  double memory = double(cost.bytes) / seconds / peaks.bytesPerSecond;
  double compute = flopsPeak > 0 ? cost.flops / seconds / flopsPeak : 0;
  return compute > memory ? PeakShare{compute, "compute"} : PeakShare{memory, "memory"};
}

} // namespace loupe
