// The runtime's fixed CUDA kernels (strided copy, row gather, scatter) compile with NVRTC to an
// sm_90 cubin with every entry the runtime loads, and none spills. NVRTC needs no GPU; skipped,
// saying why, without NVRTC, unless LOUPE_REQUIRE_NVRTC=1 (CI), where that fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <stdlib.h>

#include "compiler/codegen/cuda/nvrtc_compiler.h"
#include "compiler/runtime/cuda_fixed_kernels.h"

namespace loupe {
namespace {

TEST(CudaFixedKernels, EveryEntryCompilesToAnSm90CubinWithoutSpills) {
  std::string why;
  if (!nvrtcAvailable(&why)) {
    const char* required = std::getenv("LOUPE_REQUIRE_NVRTC");
    if (required && std::string(required) == "1")
      FAIL() << "LOUPE_REQUIRE_NVRTC=1 but NVRTC is missing: " << why;
    GTEST_SKIP() << why;
  }
  std::string pattern = (std::filesystem::temp_directory_path() / "loupe-fixed-XXXXXX").string();
  std::string cache = mkdtemp(pattern.data());
  GeneratedCudaKernel source = cudaFixedKernelSource();
  CudaKernelBuild built = NvrtcCompiler(NvrtcOptions{.arch = "sm_90", .cacheDir = cache, .jobs = 1})
                              .build({source})
                              .front();
  std::filesystem::remove_all(cache);
  EXPECT_FALSE(built.cubin.empty());
  ASSERT_EQ(built.entries.size(), source.entries.size());
  for (std::string entry : {"loupe_copy_4", "loupe_gather_16", "loupe_scatter_add_f32",
                            "loupe_scatter_add_i64", "loupe_scatter_8"})
    EXPECT_NE(std::find(source.entries.begin(), source.entries.end(), entry), source.entries.end())
        << entry;
  for (const CudaEntryResources& entry : built.entries) {
    EXPECT_EQ(entry.spillStoreBytes, 0) << entry.name;
    EXPECT_EQ(entry.spillLoadBytes, 0) << entry.name;
  }
}

} // namespace
} // namespace loupe
