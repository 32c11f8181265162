// Loading libcuda: by soname (the driver is on the loader path where a GPU is), then from
// /usr/local/nvidia/lib64 (where container runtimes mount it). The outcome, the API or the reason
// there is none, is decided once and kept for the process.
#include "compiler/runtime/cuda/cuda_driver_api.h"

#include "compiler/runtime/cuda/cuda_error.h"
#include "compiler/runtime/cuda/shared_library.h"

#include <type_traits>

namespace loupe::cu {
namespace {

struct LoadedDriver {
  DriverApi api;
  std::string failure; // empty when the API is usable
};

std::string resolveSymbols(const SharedLibrary& library, DriverApi& api) {
  std::string missing;
  auto resolve = [&](auto& member, const char* symbol, const char* olderSymbol, bool required) {
    void* address = sharedLibrarySymbol(library, symbol);
    if (!address && olderSymbol) address = sharedLibrarySymbol(library, olderSymbol);
    member = reinterpret_cast<std::remove_reference_t<decltype(member)>>(address);
    if (!address && required) missing += std::string(missing.empty() ? "" : ", ") + symbol;
  };
#define LOUPE_CUDA_DRIVER_RESOLVE(member, parameters, symbol, olderSymbol, required)               \
  resolve(api.member, symbol, olderSymbol, required);
  LOUPE_CUDA_DRIVER_FUNCTIONS(LOUPE_CUDA_DRIVER_RESOLVE)
#undef LOUPE_CUDA_DRIVER_RESOLVE
  return missing;
}

LoadedDriver loadDriver() {
  LoadedDriver loaded;
  SharedLibrary library =
      openFirstSharedLibrary({"libcuda.so.1", "/usr/local/nvidia/lib64/libcuda.so.1"});
  if (!library.handle) {
    loaded.failure = "CUDA is not available: the driver library libcuda.so.1 could not be loaded "
                     "(tried " +
                     library.failure + ")";
    return loaded;
  }
  if (std::string missing = resolveSymbols(library, loaded.api); !missing.empty()) {
    loaded.failure =
        "CUDA is not available: " + library.path + " is too old a driver, it lacks " + missing;
    return loaded;
  }
  if (CUresult result = loaded.api.cuInit(0); result != CUDA_SUCCESS) {
    // The API is loaded, so the driver can name its own error (CUDA_ERROR_NO_DEVICE, or
    // CUDA_ERROR_STUB_LIBRARY when the toolkit's stub was found instead of the driver).
    const char* name = nullptr;
    const char* text = nullptr;
    loaded.api.cuGetErrorName(result, &name);
    loaded.api.cuGetErrorString(result, &text);
    loaded.failure = "CUDA is not available: cuInit(0) in " + library.path + " returned " +
                     (name ? name : "CUresult " + std::to_string(result)) +
                     (text ? std::string(" (") + text + ")" : "");
  }
  return loaded;
}

const LoadedDriver& loadedOnce() {
  // Never destroyed: kernels, modules and events may be released from other objects' destructors
  // at exit, after this one would have been.
  static const LoadedDriver* loaded = new LoadedDriver(loadDriver());
  return *loaded;
}

} // namespace

const DriverApi* loadedDriver(std::string* why) {
  const LoadedDriver& loaded = loadedOnce();
  if (loaded.failure.empty()) return &loaded.api;
  if (why) *why = loaded.failure;
  return nullptr;
}

const DriverApi& driver() {
  std::string why;
  if (const DriverApi* api = loadedDriver(&why)) return *api;
  throw CudaError(why);
}

void check(CUresult result, std::string_view call, std::string_view what) {
  if (result != CUDA_SUCCESS) throw cudaCallError(result, call, what);
}

} // namespace loupe::cu
