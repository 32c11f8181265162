// The driver layer: without a driver every entry point fails with the reason it is missing; with a
// GPU, device queries, copies, a hand-written PTX kernel launched with one struct parameter,
// recoverable errors and the event timer.
#include "compiler/runtime/cuda/cuda_driver.h"

#include "compiler/runtime/cuda/cuda_driver_api.h"
#include "cuda_test_support.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

namespace loupe {
namespace {

// Expects `run` to throw a "cuda" Error whose message contains `part`.
template <typename Run>
void expectCudaError(Run run, const std::string& part) {
  try {
    run();
    ADD_FAILURE() << "no error; expected one containing: " << part;
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), "cuda") << error.what();
    EXPECT_NE(error.message().find(part), std::string::npos) << error.what();
  }
}

TEST(CudaDriverMissing, SaysWhatWasTried) {
  LOUPE_REQUIRE_NO_CUDA_DRIVER();
  std::string why;
  EXPECT_FALSE(cudaDriverAvailable(&why));
  EXPECT_NE(why.find("CUDA is not available"), std::string::npos) << why;
  // Either no library loaded (each path named), or the driver said why (no device).
  bool notLoaded = why.find("libcuda.so.1: ") != std::string::npos &&
                   why.find("/usr/local/nvidia/lib64/libcuda.so.1: ") != std::string::npos;
  bool noDevice =
      why.find("cuInit(0)") != std::string::npos || why.find("no device") != std::string::npos;
  EXPECT_TRUE(notLoaded || noDevice) << why;
}

TEST(CudaDriverMissing, EveryEntryPointThrowsTheReason) {
  LOUPE_REQUIRE_NO_CUDA_DRIVER();
  std::string why;
  cudaDriverAvailable(&why);
  std::string reason = why.substr(0, why.find(" (")); // the sentence before the paths tried
  char host[16] = {};
  unsigned dims[3] = {1, 1, 1};
  uint64_t args[1] = {0};
  expectCudaError([] { cudaDeviceInfo(0); }, reason);
  expectCudaError([] { cudaArch(0); }, reason);
  expectCudaError([] { cudaUseDevice(0); }, reason);
  expectCudaError([] { CudaModule module("not loaded", 0); }, reason);
  expectCudaError([] { CudaDeviceMemory memory(16, 0); }, reason);
  expectCudaError([] { CudaEventTimer timer; }, reason);
  expectCudaError([&] { cudaCopyAsync(host, host + 8, 8, nullptr); }, reason);
  expectCudaError([&] { cudaMemsetAsync(host, 0, 8, nullptr); }, reason);
  expectCudaError([] { cudaStreamSync(nullptr); }, reason);
  expectCudaError([&] { cudaLaunch(nullptr, dims, dims, 0, nullptr, args, 8, "kernel k0"); },
                  reason);
}

// out[i] = in[i] * 2 + addend for i < n, the parameter a struct of four 8-byte words
// {out, in, n, addend}, as the generated kernels take theirs. PTX, so the driver compiles it for
// whatever device runs the test.
constexpr const char* kAffinePtx = R"(
.version 7.0
.target sm_75
.address_size 64

.visible .entry loupe_test_affine(.param .align 8 .b8 args[32])
{
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<12>;
  .reg .f32 %f<4>;

  ld.param.u64 %rd1, [args];
  ld.param.u64 %rd2, [args+8];
  ld.param.u64 %rd3, [args+16];
  ld.param.u64 %rd4, [args+24];
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mul.wide.u32 %rd5, %r1, %r2;
  cvt.u64.u32 %rd6, %r3;
  add.s64 %rd7, %rd5, %rd6;
  setp.ge.s64 %p1, %rd7, %rd3;
  @%p1 bra DONE;
  shl.b64 %rd9, %rd7, 2;
  cvta.to.global.u64 %rd8, %rd2;
  add.s64 %rd10, %rd8, %rd9;
  ld.global.f32 %f1, [%rd10];
  cvt.rn.f32.s64 %f2, %rd4;
  fma.rn.f32 %f3, %f1, 0f40000000, %f2;
  cvta.to.global.u64 %rd8, %rd1;
  add.s64 %rd11, %rd8, %rd9;
  st.global.f32 [%rd11], %f3;
DONE:
  ret;
}
)";

struct AffineArgs {
  void* out;
  const void* in;
  int64_t n;
  int64_t addend;
};
static_assert(sizeof(AffineArgs) == 32);

std::vector<float> download(const CudaDeviceMemory& memory, size_t count) {
  std::vector<float> host(count);
  cudaCopyAsync(host.data(), memory.data(), count * sizeof(float), nullptr);
  cudaStreamSync(nullptr);
  return host;
}

TEST(CudaDevice, DescribesTheDevice) {
  LOUPE_REQUIRE_CUDA_DEVICE();
  CudaDeviceInfo info = cudaDeviceInfo(0);
  EXPECT_EQ(info.index, 0);
  EXPECT_FALSE(info.name.empty());
  EXPECT_GE(info.computeMajor, 7);
  EXPECT_GT(info.multiprocessors, 0);
  EXPECT_GT(info.totalMemory, int64_t(1) << 30);
  EXPECT_GE(info.maxSharedPerBlockOptin, 48 * 1024);
  EXPECT_EQ(cudaArch(0),
            "sm_" + std::to_string(info.computeMajor) + std::to_string(info.computeMinor));
  std::cout << info.name << ", " << cudaArch(0) << ", " << info.multiprocessors << " SMs\n";
  expectCudaError([] { cudaDeviceInfo(1 << 20); }, "device 1048576");
}

TEST(CudaDevice, UsesThePrimaryContext) {
  LOUPE_REQUIRE_CUDA_DEVICE();
  cudaUseDevice(0);
  cu::CUcontext first = nullptr;
  cu::check(cu::driver().cuCtxGetCurrent(&first), "cuCtxGetCurrent");
  EXPECT_NE(first, nullptr);
  cudaUseDevice(0);
  cu::CUcontext second = nullptr;
  cu::check(cu::driver().cuCtxGetCurrent(&second), "cuCtxGetCurrent");
  EXPECT_EQ(first, second);
  expectCudaError([] { cudaUseDevice(-1); }, "no CUDA device -1");
}

TEST(CudaDevice, CopiesRoundTripAndFills) {
  LOUPE_REQUIRE_CUDA_DEVICE();
  std::vector<float> values(1000);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = float(i) * 0.5f - 7;
  CudaDeviceMemory first(values.size() * sizeof(float), 0), second(first.bytes(), 0);
  cudaCopyAsync(first.data(), values.data(), first.bytes(), nullptr);
  cudaCopyAsync(second.data(), first.data(), first.bytes(), nullptr);
  EXPECT_EQ(download(second, values.size()), values);

  cudaMemsetAsync(second.data(), 0xff, second.bytes(), nullptr); // NaN poison
  std::vector<float> poisoned = download(second, values.size());
  for (float value : poisoned)
    ASSERT_TRUE(std::isnan(value));
}

TEST(CudaDevice, LaunchesAKernelWithOneStructParameter) {
  LOUPE_REQUIRE_CUDA_DEVICE();
  CudaModule module(kAffinePtx, 0);
  CudaModule::Attributes attributes = module.attributes("loupe_test_affine");
  EXPECT_GT(attributes.registers, 0);
  EXPECT_GE(attributes.maxThreadsPerBlock, 256);
  EXPECT_EQ(attributes.staticSharedBytes, 0);

  constexpr int64_t n = 1000;
  std::vector<float> input(n);
  for (int64_t i = 0; i < n; ++i)
    input[i] = float(i % 97) - 40;
  CudaDeviceMemory in(n * sizeof(float), 0), out((n + 24) * sizeof(float), 0);
  cudaCopyAsync(in.data(), input.data(), in.bytes(), nullptr);
  cudaMemsetAsync(out.data(), 0xff, out.bytes(), nullptr);
  AffineArgs args{out.data(), in.data(), n, 3};
  unsigned grid[3] = {8, 1, 1}, block[3] = {128, 1, 1}; // 1024 threads: 24 past the end
  cudaLaunch(module.function("loupe_test_affine"), grid, block, 0, nullptr, &args, sizeof(args),
             "kernel affine");
  cudaCheckAsyncErrors(nullptr, "the affine kernel");
  std::vector<float> result = download(out, n + 24);
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(result[i], input[i] * 2 + 3) << i;
  for (int64_t i = n; i < n + 24; ++i)
    ASSERT_TRUE(std::isnan(result[i])) << i;
}

TEST(CudaDevice, RefusesAnArgumentStructOfTheWrongSize) {
  LOUPE_REQUIRE_CUDA_DEVICE();
  if (!cu::driver().cuFuncGetParamInfo) GTEST_SKIP() << "the driver predates cuFuncGetParamInfo";
  CudaModule module(kAffinePtx, 0);
  void* affine = module.function("loupe_test_affine");
  cudaCheckParameter(affine, sizeof(AffineArgs), "kernel affine"); // the right size passes
  expectCudaError([&] { cudaCheckParameter(affine, 24, "kernel affine"); },
                  "cannot launch kernel affine: the kernel takes a 32-byte parameter, the launch "
                  "passes one struct of 24 bytes");
  uint64_t args[3] = {};
  unsigned one[3] = {1, 1, 1};
  // A struct past the parameter limit is refused at launch too, before the driver reads it.
  expectCudaError(
      [&] {
        cudaLaunch(affine, one, one, 0, nullptr, args, kMaxKernelParameterBytes + 8,
                   "kernel affine");
      },
      "more than a kernel parameter may");
}

TEST(CudaDevice, ALaunchErrorNamesWhatWasLaunched) {
  LOUPE_REQUIRE_CUDA_DEVICE();
  CudaModule module(kAffinePtx, 0);
  AffineArgs args{nullptr, nullptr, 0, 0};
  unsigned one[3] = {1, 1, 1}, tooLarge[3] = {4096, 1, 1};
  int described = 0;
  // The description is made only when the launch fails.
  cudaLaunch(module.function("loupe_test_affine"), one, one, 0, nullptr, &args, sizeof(args),
             [&] { return "kernel affine #" + std::to_string(++described); });
  cudaCheckAsyncErrors(nullptr, "an empty affine launch");
  EXPECT_EQ(described, 0);
  expectCudaError(
      [&] {
        cudaLaunch(module.function("loupe_test_affine"), one, tooLarge, 0, nullptr, &args,
                   sizeof(args), [&] { return "kernel affine #" + std::to_string(++described); });
      },
      "cuLaunchKernel failed for kernel affine #1: CUDA_ERROR_INVALID_VALUE");
}

TEST(CudaDevice, RecoverableErrorsLeaveTheContextUsable) {
  LOUPE_REQUIRE_CUDA_DEVICE();
  try {
    CudaModule broken("this is not PTX", 0);
    ADD_FAILURE() << "loaded an invalid image";
  } catch (const CudaError& error) {
    EXPECT_FALSE(error.sticky());
    EXPECT_NE(error.message().find("cuModuleLoadData failed"), std::string::npos) << error.what();
    EXPECT_NE(error.message().find("CUDA_ERROR_"), std::string::npos) << error.what();
  }
  CudaModule module(kAffinePtx, 0);
  expectCudaError([&] { module.function("loupe_missing_kernel"); },
                  "cuModuleGetFunction failed for kernel loupe_missing_kernel: "
                  "CUDA_ERROR_NOT_FOUND");
  unsigned grid[3] = {1, 1, 1}, tooLarge[3] = {4096, 1, 1};
  AffineArgs args{nullptr, nullptr, 0, 0};
  expectCudaError(
      [&] {
        cudaLaunch(module.function("loupe_test_affine"), grid, tooLarge, 0, nullptr, &args,
                   sizeof(args), "kernel affine, block [4096, 1, 1]");
      },
      "cuLaunchKernel failed for kernel affine, block [4096, 1, 1]: CUDA_ERROR_INVALID_VALUE");
  // Still usable: a copy works.
  CudaDeviceMemory memory(64, 0);
  cudaMemsetAsync(memory.data(), 0, 64, nullptr);
  cudaCheckAsyncErrors(nullptr, "the fill after the errors");
  EXPECT_EQ(download(memory, 16), std::vector<float>(16, 0.0f));
}

TEST(CudaDevice, TimesWorkWithEvents) {
  LOUPE_REQUIRE_CUDA_DEVICE();
  cudaUseDevice(0);
  CudaDeviceMemory memory(64 << 20, 0);
  CudaEventTimer timer;
  timer.start(nullptr);
  cudaMemsetAsync(memory.data(), 1, memory.bytes(), nullptr);
  timer.stop(nullptr);
  float elapsed = timer.milliseconds();
  EXPECT_GT(elapsed, 0.0f);
  EXPECT_LT(elapsed, 1000.0f);
}

} // namespace
} // namespace loupe
