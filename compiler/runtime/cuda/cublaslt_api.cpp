// Loading cuBLASLt from the places cublasLtCandidates lists, once per process. It is loaded only
// where the driver is: the library needs it for everything it does. libcublasLt.so.13 depends on
// no other CUDA library (libcublas depends on it, not the reverse), so a full path opens alone.
#include "compiler/runtime/cuda/cublaslt_api.h"

#include "compiler/runtime/cuda/cuda_driver.h"
#include "compiler/runtime/cuda/cuda_error.h"
#include "compiler/runtime/cuda/shared_library.h"

#include <cstdlib>
#include <type_traits>

namespace loupe::lt {
namespace {

constexpr const char* kSoname = "libcublasLt.so.13";

struct LoadedCublasLt {
  CublasLtApi api;
  std::string failure; // empty when the API is usable
};

LoadedCublasLt loadCublasLt() {
  LoadedCublasLt loaded;
  if (!cudaDriverAvailable(&loaded.failure)) {
    loaded.failure = "cuBLASLt is not used: " + loaded.failure;
    return loaded;
  }
  SharedLibrary library = openFirstSharedLibrary(cublasLtCandidates());
  if (!library.handle) {
    loaded.failure = "cuBLASLt is not available: " + std::string(kSoname) +
                     " could not be loaded (tried " + library.failure +
                     "); set LOUPE_CUBLASLT to its path";
    return loaded;
  }
  std::string missing;
  auto resolve = [&](auto& member, const char* symbol) {
    member = reinterpret_cast<std::remove_reference_t<decltype(member)>>(
        sharedLibrarySymbol(library, symbol));
    if (!member) missing += std::string(missing.empty() ? "" : ", ") + symbol;
  };
#define LOUPE_CUBLASLT_RESOLVE(member, result, parameters) resolve(loaded.api.member, #member);
  LOUPE_CUBLASLT_FUNCTIONS(LOUPE_CUBLASLT_RESOLVE)
#undef LOUPE_CUBLASLT_RESOLVE
  if (!missing.empty())
    loaded.failure = "cuBLASLt is not available: " + library.path + " lacks " + missing;
  return loaded;
}

const LoadedCublasLt& loadedOnce() {
  // Never destroyed, like the driver's table: plans may be released at exit.
  static const LoadedCublasLt* loaded = new LoadedCublasLt(loadCublasLt());
  return *loaded;
}

} // namespace

std::vector<std::string> cublasLtCandidates() {
  std::vector<std::string> candidates;
  if (const char* path = std::getenv("LOUPE_CUBLASLT"); path && *path) candidates.push_back(path);
  candidates.push_back(kSoname);
  candidates.push_back(std::string("/usr/local/cuda/lib64/") + kSoname);
  if (const char* folders = std::getenv("LOUPE_CUDA_LIBRARY_PATH"))
    for (const std::string& folder : splitSearchPath(folders))
      candidates.push_back(folder + "/" + kSoname);
  return candidates;
}

const CublasLtApi* loadedCublasLt(std::string* why) {
  const LoadedCublasLt& loaded = loadedOnce();
  if (loaded.failure.empty()) return &loaded.api;
  if (why) *why = loaded.failure;
  return nullptr;
}

void check(cublasStatus_t status, const char* call, const std::string& what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  const CublasLtApi& api = *loadedCublasLt(nullptr); // a status comes from a loaded library
  std::string message = std::string(call) + " failed";
  if (!what.empty()) message += " for " + what;
  message += std::string(": ") + api.cublasLtGetStatusName(status) + " (" +
             api.cublasLtGetStatusString(status) + ")";
  throw CudaError(std::move(message), status);
}

} // namespace loupe::lt
