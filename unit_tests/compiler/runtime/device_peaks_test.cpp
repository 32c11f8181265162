// A GPU's peaks from its driver's attributes, and a kernel's share of them
// (compiler/runtime/device_peaks.h), checked against the figures NVIDIA publishes.
#include "compiler/runtime/device_peaks.h"

#include <gtest/gtest.h>

namespace loupe {
namespace {

// An H100 SXM as its driver reports it: 132 SMs at 1980 MHz, HBM3 at 2619 MHz on 5120 bits.
DevicePeaks h100() {
  return cudaDevicePeaks(9, 132, 1980000, 2619000, 5120);
}

TEST(DevicePeaks, AnH100sPeaksAreItsDatasheets) {
  DevicePeaks peaks = h100();
  EXPECT_NEAR(peaks.bytesPerSecond, 3.35e12, 0.01e12);    // 3.35 TB/s
  EXPECT_NEAR(peaks.fp32FlopsPerSecond, 66.9e12, 0.1e12); // 67 TFLOP/s fp32
  EXPECT_NEAR(peaks.tensorFlopsPerSecond, 1070e12, 1e12); // 989 at the 1830 MHz boost
}

TEST(DevicePeaks, AnA100sComputeIsHalfPerClockAndAnOlderGpuHasNone) {
  DevicePeaks a100 = cudaDevicePeaks(8, 108, 1410000, 1215000, 5120);
  EXPECT_NEAR(a100.fp32FlopsPerSecond, 19.5e12, 0.1e12);
  EXPECT_NEAR(a100.tensorFlopsPerSecond, 312e12, 1e12);
  EXPECT_NEAR(a100.bytesPerSecond, 1.555e12, 0.01e12);
  DevicePeaks volta = cudaDevicePeaks(7, 80, 1530000, 877000, 4096);
  EXPECT_GT(volta.bytesPerSecond, 0);
  EXPECT_EQ(volta.fp32FlopsPerSecond, 0);
}

TEST(DevicePeaks, AShareIsTheLargerOfBandwidthAndCompute) {
  DevicePeaks peaks{
      .bytesPerSecond = 1e12, .fp32FlopsPerSecond = 1e13, .tensorFlopsPerSecond = 1e14};
  // 1 GB in 2 ms is 0.5 TB/s: half the bandwidth; 1 GFLOP in 2 ms is 5% of fp32.
  auto pointwise = peakShare({.bytes = 1'000'000'000, .flops = 1e9}, 2, peaks, DType::F32, false);
  ASSERT_TRUE(pointwise);
  EXPECT_DOUBLE_EQ(pointwise->fraction, 0.5);
  EXPECT_EQ(pointwise->bound, "memory");
  // 1e11 FLOPs in 20 ms is 5 TFLOP/s: half of fp32, 5% of the tensor cores in bf16.
  OpCost matmul{.bytes = 1'000'000, .flops = 1e11};
  EXPECT_DOUBLE_EQ(peakShare(matmul, 20, peaks, DType::F32, true)->fraction, 0.5);
  EXPECT_EQ(peakShare(matmul, 20, peaks, DType::F32, true)->bound, "compute");
  EXPECT_DOUBLE_EQ(peakShare(matmul, 20, peaks, DType::BF16, true)->fraction, 0.05);
  // A bf16 pointwise kernel computes in float: held against fp32.
  EXPECT_DOUBLE_EQ(peakShare(matmul, 20, peaks, DType::BF16, false)->fraction, 0.5);
}

TEST(DevicePeaks, NoShareWithoutAPeakOrATime) {
  EXPECT_FALSE(peakShare({.bytes = 8, .flops = 1}, 1, DevicePeaks{}, DType::F32, false));
  EXPECT_FALSE(peakShare({.bytes = 8, .flops = 1}, 0, h100(), DType::F32, false));
}

} // namespace
} // namespace loupe
