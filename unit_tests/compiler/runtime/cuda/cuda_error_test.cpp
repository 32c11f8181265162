// CUDA error descriptions and stickiness, without a driver: the built-in table names results,
// the documented context-killing results are sticky, and the classification survives an Error
// copied with more context.
#include "compiler/runtime/cuda/cuda_error.h"

#include <gtest/gtest.h>

namespace loupe {
namespace {

TEST(CudaError, TableNamesResultsWithoutTheDriver) {
  EXPECT_EQ(describeCudaResult(700, false), "CUDA_ERROR_ILLEGAL_ADDRESS");
  EXPECT_EQ(describeCudaResult(100, false), "CUDA_ERROR_NO_DEVICE");
  EXPECT_EQ(describeCudaResult(0, false), "CUDA_SUCCESS");
  EXPECT_EQ(describeCudaResult(999, false), "CUDA_ERROR_UNKNOWN");
  EXPECT_EQ(describeCudaResult(12345, false), "CUresult 12345");
}

TEST(CudaError, StickyResultsAreTheContextKillingOnes) {
  for (int sticky : {214, 700, 702, 710, 714, 715, 716, 717, 718, 719})
    EXPECT_TRUE(isStickyCudaResult(sticky)) << describeCudaResult(sticky, false);
  // Recoverable: bad arguments, out of memory, invalid PTX, a launch asking for too much.
  for (int recoverable : {0, 1, 2, 100, 200, 218, 400, 500, 600, 701, 999})
    EXPECT_FALSE(isStickyCudaResult(recoverable)) << describeCudaResult(recoverable, false);
}

TEST(CudaError, CallErrorNamesCallWhatAndResult) {
  CudaError error = cudaCallError(1, "cuLaunchKernel", "kernel k3 (loupe_k3_vec)");
  EXPECT_EQ(error.kind(), "cuda");
  EXPECT_EQ(error.result(), 1);
  EXPECT_FALSE(error.sticky());
  std::string message = error.message();
  EXPECT_NE(message.find("cuLaunchKernel failed for kernel k3 (loupe_k3_vec)"), std::string::npos)
      << message;
  EXPECT_NE(message.find("CUDA_ERROR_INVALID_VALUE"), std::string::npos) << message;
  EXPECT_EQ(message.find(kCudaContextUnusable), std::string::npos) << message;
  EXPECT_FALSE(isStickyCudaError(error));
}

TEST(CudaError, StickyCallErrorSaysToRestart) {
  CudaError error = cudaCallError(700, "cuStreamSynchronize", "");
  EXPECT_TRUE(error.sticky());
  std::string message = error.what();
  EXPECT_NE(message.find("cuda error: cuStreamSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("the CUDA context is no longer usable: restart the process"),
            std::string::npos)
      << message;
  EXPECT_TRUE(isStickyCudaError(error));
}

TEST(CudaError, StickinessSurvivesAddedContext) {
  Error withGraph = cudaCallError(719, "cuLaunchKernel", "kernel k0").withContext({.graph = "g"});
  EXPECT_TRUE(isStickyCudaError(withGraph));
  EXPECT_FALSE(isStickyCudaError(cudaCallError(2, "cuMemAlloc", "").withContext({.graph = "g"})));
  EXPECT_FALSE(isStickyCudaError(Error("verify", std::string(kCudaContextUnusable))));
  EXPECT_FALSE(isStickyCudaError(std::runtime_error("CUDA_ERROR_ILLEGAL_ADDRESS")));
}

} // namespace
} // namespace loupe
