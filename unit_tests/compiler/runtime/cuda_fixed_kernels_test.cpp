// The runtime's fixed CUDA kernels (strided copy, row gather, scatter): each entry a program of
// its own, chosen by what a launch moves, compiling with NVRTC to an sm_90 cubin without spills.
// NVRTC needs no GPU; skipped, saying why, without NVRTC, unless LOUPE_REQUIRE_NVRTC=1 (CI), where
// that fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include <stdlib.h>

#include "compiler/codegen/cuda/nvrtc_compiler.h"
#include "compiler/ir/error.h"
#include "compiler/runtime/cuda_fixed_kernels.h"

namespace loupe {
namespace {

// The entry a launch takes is named by what it moves: the element size of the copy, the units
// a gather of the table's dtype may use, the dtype a scatter writes or adds.
TEST(CudaFixedKernels, EntriesAreChosenByWhatTheyMove) {
  auto name = [](size_t entry) { return cudaFixedKernelSource(entry).entries.at(0); };
  EXPECT_EQ(name(CudaFixedKernels::copyEntry(DType::F32)), "loupe_copy_4");
  EXPECT_EQ(name(CudaFixedKernels::copyEntry(DType::BF16)), "loupe_copy_2");
  EXPECT_EQ(name(CudaFixedKernels::copyEntry(DType::Bool)), "loupe_copy_1");
  std::vector<std::string> gathers;
  for (size_t entry : CudaFixedKernels::gatherEntries(DType::BF16))
    gathers.push_back(name(entry));
  EXPECT_EQ(gathers, (std::vector<std::string>{"loupe_gather_2", "loupe_gather_4", "loupe_gather_8",
                                               "loupe_gather_16"}));
  EXPECT_EQ(CudaFixedKernels::gatherEntries(DType::F64).size(), 2u);
  auto scatter = [](DType dtype, bool add, size_t rank, size_t indexCount) {
    return CudaFixedKernels::scatterEntry(dtype, add, rank, indexCount);
  };
  EXPECT_EQ(name(*scatter(DType::F32, true, 4, 2)), "loupe_scatter_add_f32_r4_k2");
  EXPECT_EQ(name(*scatter(DType::I64, true, 1, 1)), "loupe_scatter_add_i64_r1_k1");
  EXPECT_EQ(name(*scatter(DType::BF16, false, 8, 8)), "loupe_scatter_2_r8_k8");
  EXPECT_EQ(name(*scatter(DType::Bool, false, 0, 1)), "loupe_scatter_1_r0_k1");
  EXPECT_FALSE(scatter(DType::BF16, true, 1, 1).has_value());
  EXPECT_FALSE(scatter(DType::F32, true, 9, 1).has_value());
  EXPECT_FALSE(scatter(DType::F32, true, 2, 9).has_value());
  // Every entry is a program of its own, its family's text and its one function, named apart.
  std::set<std::string> names;
  for (size_t entry = 0; entry < CudaFixedKernels::kEntryCount; ++entry) {
    GeneratedCudaKernel source = cudaFixedKernelSource(entry);
    ASSERT_EQ(source.entries.size(), 1u);
    EXPECT_EQ(source.source.find("__global__"), source.source.rfind("__global__")) << entry;
    EXPECT_TRUE(names.insert(source.entries[0]).second) << source.entries[0];
  }
  EXPECT_THROW(cudaFixedKernelSource(CudaFixedKernels::kEntryCount), Error);
}

TEST(CudaFixedKernels, EntriesCompileToSm90CubinsWithoutSpills) {
  std::string why;
  if (!nvrtcAvailable(&why)) {
    const char* required = std::getenv("LOUPE_REQUIRE_NVRTC");
    if (required && std::string(required) == "1")
      FAIL() << "LOUPE_REQUIRE_NVRTC=1 but NVRTC is missing: " << why;
    GTEST_SKIP() << why;
  }
  std::string pattern = (std::filesystem::temp_directory_path() / "loupe-fixed-XXXXXX").string();
  std::string cache = mkdtemp(pattern.data());
  // Every copy and gather; the scatters of every element kind at the smallest, a common
  // (upsampling's gradient: rank 4, two index tensors) and the largest shape.
  std::vector<size_t> entries;
  for (DType dtype : {DType::Bool, DType::BF16, DType::F32, DType::F64}) {
    entries.push_back(CudaFixedKernels::copyEntry(dtype));
    for (bool add : {false, true})
      for (auto [rank, indexCount] : {std::pair<size_t, size_t>{0, 1}, {4, 2}, {8, 8}})
        if (auto entry = CudaFixedKernels::scatterEntry(dtype, add, rank, indexCount))
          entries.push_back(*entry);
  }
  for (DType dtype : {DType::I32, DType::I64})
    entries.push_back(*CudaFixedKernels::scatterEntry(dtype, true, 4, 2));
  for (size_t entry : CudaFixedKernels::gatherEntries(DType::Bool))
    entries.push_back(entry);
  std::vector<GeneratedCudaKernel> sources;
  for (size_t entry : entries)
    sources.push_back(cudaFixedKernelSource(entry));
  std::vector<CudaKernelBuild> built =
      NvrtcCompiler(NvrtcOptions{.arch = "sm_90", .cacheDir = cache}).build(sources);
  std::filesystem::remove_all(cache);
  ASSERT_EQ(built.size(), sources.size());
  for (size_t entry = 0; entry < built.size(); ++entry) {
    EXPECT_FALSE(built[entry].cubin.empty()) << sources[entry].entries[0];
    ASSERT_EQ(built[entry].entries.size(), 1u);
    EXPECT_EQ(built[entry].entries[0].name, sources[entry].entries[0]);
    EXPECT_EQ(built[entry].entries[0].spillStoreBytes, 0) << sources[entry].entries[0];
    EXPECT_EQ(built[entry].entries[0].spillLoadBytes, 0) << sources[entry].entries[0];
  }
}

} // namespace
} // namespace loupe
