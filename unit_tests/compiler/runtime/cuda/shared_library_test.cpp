// Finding shared libraries at run time: candidates tried in order, every failure reported, and the
// cuBLASLt search order with its environment variables.
#include "compiler/runtime/cuda/cublaslt_api.h"
#include "compiler/runtime/cuda/shared_library.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>

namespace loupe {
namespace {

// Sets an environment variable for one test, restoring the old value after.
class ScopedEnv {
public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }

private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(CudaSharedLibrary, SplitsSearchPathSkippingEmptyFolders) {
  EXPECT_EQ(splitSearchPath("/a::/b/c:"), (std::vector<std::string>{"/a", "/b/c"}));
  EXPECT_TRUE(splitSearchPath("").empty());
}

TEST(CudaSharedLibrary, ReportsEveryCandidateTried) {
  SharedLibrary library =
      openFirstSharedLibrary({"/nonexistent/libloupe_x.so.1", "libloupe_nonexistent.so.9"});
  EXPECT_EQ(library.handle, nullptr);
  EXPECT_NE(library.failure.find("/nonexistent/libloupe_x.so.1: "), std::string::npos)
      << library.failure;
  EXPECT_NE(library.failure.find("; libloupe_nonexistent.so.9: "), std::string::npos)
      << library.failure;
}

TEST(CudaSharedLibrary, KeepsTheFirstThatOpens) {
  SharedLibrary library = openFirstSharedLibrary({"libloupe_nonexistent.so.9", "libc.so.6"});
  ASSERT_NE(library.handle, nullptr) << library.failure;
  EXPECT_EQ(library.path, "libc.so.6");
  EXPECT_TRUE(library.failure.empty());
  EXPECT_NE(sharedLibrarySymbol(library, "strlen"), nullptr);
  EXPECT_EQ(sharedLibrarySymbol(library, "loupe_no_such_symbol"), nullptr);
}

TEST(CudaSharedLibrary, CublasLtSearchOrder) {
  ScopedEnv path("LOUPE_CUBLASLT", "/opt/x/libcublasLt.so.13");
  ScopedEnv folders("LOUPE_CUDA_LIBRARY_PATH", "/site/nvidia/cu13/lib:/other");
  EXPECT_EQ(lt::cublasLtCandidates(),
            (std::vector<std::string>{"/opt/x/libcublasLt.so.13", "libcublasLt.so.13",
                                      "/usr/local/cuda/lib64/libcublasLt.so.13",
                                      "/site/nvidia/cu13/lib/libcublasLt.so.13",
                                      "/other/libcublasLt.so.13"}));
}

TEST(CudaSharedLibrary, CublasLtSearchWithoutEnvironment) {
  ScopedEnv path("LOUPE_CUBLASLT", "");
  ScopedEnv folders("LOUPE_CUDA_LIBRARY_PATH", "");
  EXPECT_EQ(
      lt::cublasLtCandidates(),
      (std::vector<std::string>{"libcublasLt.so.13", "/usr/local/cuda/lib64/libcublasLt.so.13"}));
}

} // namespace
} // namespace loupe
