// Turns generated kernels into callable functions, compiled by the host C++ compiler into
// shared objects that are cached on disk and dlopen'ed.
//
// A kernel is identified by its content: the key hashes its source with the entry name
// abstracted, the compiler, its flags and version. So identical kernels under different names
// (the same layer repeated, a pattern shared by forward and backward) compile once, and a kernel
// compiled for any earlier graph, in this process or another sharing the cache, is never
// compiled again. Kernels not in the cache are compiled together, split into up to `jobs`
// translation units that the compiler builds at once.
//
// Cache files are written to a temporary name and renamed into place, so processes sharing a
// cache never see a half-written file. A cached library that fails to load (truncated,
// corrupted, deleted) is rebuilt. Loaded libraries stay loaded for the life of the process, so
// kernel pointers never dangle.
#pragma once

#include <string>
#include <vector>

#include "compiler/codegen/cpu/cpu_codegen.h"
#include "compiler/codegen/cpu/cpu_kernel_abi.h"

namespace loupe {

struct CpuCompilerOptions {
  std::string cacheDir; // empty: ${LOUPE_CACHE_DIR:-$HOME/.cache/loupe}/kernels
  std::string compiler; // empty: $LOUPE_CXX, else c++
  // No -march=native: a cache directory may be shared between machines.
  std::vector<std::string> flags = {"-O3",     "-fno-math-errno", "-std=c++17",
                                    "-shared", "-fPIC",           "-fopenmp"};
  // Compiler processes run at once on a miss; 0: $LOUPE_COMPILE_JOBS, else one per usable core.
  int jobs = 0;
};

class CpuCompiler {
public:
  explicit CpuCompiler(CpuCompilerOptions options = {});

  // Entry points of `kernels`, in order (identical kernels get the same function). Throws
  // Error("codegen", ...) with the compiler's diagnostics and the path of the kept source when
  // compilation fails.
  std::vector<CpuKernelFn> load(const std::vector<GeneratedKernel>& kernels);
  CpuKernelFn load(const GeneratedKernel& kernel) { return load(std::vector{kernel}).front(); }

  // The content key of `kernel`, and the cached library that holds it (empty when the cache
  // has no record of it).
  std::string kernelKey(const GeneratedKernel& kernel) const;
  std::string libraryOf(const GeneratedKernel& kernel) const;
  const std::string& cacheDir() const { return cacheDir_; }
  int jobs() const { return jobs_; }
  // How many times this instance ran the host compiler; a cache hit does not count.
  int compilerRuns() const { return compilerRuns_; }

private:
  struct Unit; // one translation unit being compiled
  std::string libraryForKey(const std::string& key) const;
  void compileAll(std::vector<Unit>& units);

  CpuCompilerOptions options_;
  std::string cacheDir_;
  std::string compilerVersion_;
  int jobs_ = 1;
  int compilerRuns_ = 0;
};

} // namespace loupe
