// Turns generated CUDA kernels into cubins with NVRTC, kept in the kernel cache
// (compiler/codegen/kernel_cache.h). NVRTC is loaded at run time (dlopen), so Loupe builds and
// runs without it; nvrtcAvailable says whether it was found and where it was looked for
// (docs/cuda-codegen.md, "NVRTC").
//
// A kernel's key hashes its source, the architecture, NVRTC's version and the options, so a
// second build of the same kernel, in this process or another sharing the cache, is a hit. The
// cubin is the artifact; ptxas's per-entry resources (registers, shared memory, spills) are kept
// beside it as text, for the trace and for tests that bound them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compiler/codegen/cuda/cuda_codegen.h"
#include "compiler/codegen/kernel_cache.h"

namespace loupe {

struct CudaEntryResources {
  std::string name;
  int registers = 0;
  int sharedBytes = 0;
  int stackBytes = 0;
  int spillStoreBytes = 0;
  int spillLoadBytes = 0;
};

struct CudaKernelBuild {
  std::string cubin;
  bool fromCache = false;
  double buildMs = 0;                      // NVRTC's compile, or reading the cache
  std::vector<CudaEntryResources> entries; // per entry, in GeneratedCudaKernel::entries order
};

struct NvrtcOptions {
  std::string arch = "sm_90";
  std::string cacheDir;      // empty: configuredKernelCacheLocation()
  int jobs = 0;              // compiles at once; 0: $LOUPE_COMPILE_JOBS, else one per usable core
  int64_t cacheMaxBytes = 0; // 0: configuredKernelCacheLimit()
};

// Whether NVRTC can be loaded; when not, `why` names every path tried. Loading happens once.
// Search order: $LOUPE_NVRTC (a path to libnvrtc.so.*), libnvrtc.so.13 and libnvrtc.so.12 by
// soname, /usr/local/cuda/lib64, then the folders of $LOUPE_CUDA_LIBRARY_PATH (colon-separated).
bool nvrtcAvailable(std::string* why);

// Starts NVRTC on a thread of its own, once per process, and returns at once: it loads the
// library and compiles an empty program with Loupe's options, so that NVRTC's one-time start-up
// (about 0.17 s of the first compile of a process on an H100's host) overlaps whatever the
// caller does next (the Python adapter calls it when Dynamo hands over a graph on a GPU, before
// aot_autograd traces it). Without NVRTC it does nothing.
void startNvrtc();

// ptxas's -v report in an NVRTC log, per entry named in `entries` (in that order; an entry the
// log does not mention keeps zeros).
std::vector<CudaEntryResources> parsePtxasResources(const std::string& log,
                                                    const std::vector<std::string>& entries);

class NvrtcCompiler {
public:
  explicit NvrtcCompiler(NvrtcOptions options = {});
  ~NvrtcCompiler();

  // In order; compiles the misses in parallel (`jobs` at once). Throws Error("codegen", ...)
  // with NVRTC's log and the kernel's entry names when one fails, or when NVRTC is not available.
  std::vector<CudaKernelBuild> build(const std::vector<GeneratedCudaKernel>& kernels);

  // The NVRTC options every kernel is compiled with.
  std::vector<std::string> compileOptions() const;
  const std::string& cacheDir() const { return cache().dir(); }

private:
  KernelCache& cache() const;

  NvrtcOptions options_;
  int jobs_ = 1;
  mutable std::unique_ptr<KernelCache> cache_;
};

} // namespace loupe
