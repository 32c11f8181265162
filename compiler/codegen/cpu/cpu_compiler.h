// Turns generated kernels into callable functions, compiled by the host C++ compiler into
// shared objects that are kept in the kernel cache (compiler/codegen/kernel_cache.h) and loaded
// from the bytes the cache verified.
//
// A kernel is identified by its content: the key hashes its source with the entry name
// abstracted, the compiler, its flags and version, and the instruction set it is compiled for
// (cpu_isa.h: the machine's own by default, so machines sharing a cache never share a library
// one of them cannot run). So identical kernels under different names
// (the same layer repeated, a pattern shared by forward and backward) compile once, and a kernel
// compiled for any earlier graph, in this process or another sharing the cache, is never
// compiled again. Kernels not in the cache are compiled together, split into up to `jobs`
// translation units that the compiler builds at once; it reads each unit from memory, so
// nothing in the cache folder is ever an input to it.
//
// A cached library that does not verify (damaged, replaced, a link) or does not load is
// rebuilt. A library is loaded through a sealed in-memory copy of the verified bytes, once per
// process however often it is found, and stays loaded for the life of the process, so kernel
// pointers never dangle.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compiler/codegen/cpu/cpu_codegen.h"
#include "compiler/codegen/cpu/cpu_isa.h"
#include "compiler/codegen/cpu/cpu_kernel_abi.h"
#include "compiler/codegen/kernel_cache.h"

namespace loupe {

struct CpuCompilerOptions {
  std::string cacheDir; // empty: configuredKernelCacheLocation() (kernel_cache.h)
  std::string compiler; // empty: $LOUPE_CXX, else c++
  // The instruction set's flags (-march=..., vector math) are added to these (cpu_isa.h).
  // -fno-trapping-math (floating-point exception flags are not observed, as in torch) lets GCC
  // evaluate both sides of a select, so loops with one (half conversions) vectorise. -O2, not
  // -O3: a third less compile time, which every cold first call waits for, and the same kernel
  // speed (the hot loops are `omp simd`; docs/cpu-codegen.md, "`-O2`, not `-O3`").
  std::vector<std::string> flags = {
      "-O2", "-fno-math-errno", "-fno-trapping-math", "-std=c++17", "-shared", "-fPIC", "-fopenmp"};
  // The instruction set kernels are compiled for: empty: $LOUPE_CPU_ISA, else the machine's own
  // ("native"); or "x86-64-v4", "x86-64-v3", "portable" (cpu_isa.h).
  std::string isa;
  // Compiler processes run at once on a miss; 0: $LOUPE_COMPILE_JOBS, else one per usable core.
  int jobs = 0;
  // The cache's size limit; 0: $LOUPE_CACHE_MAX_MB megabytes, else 300 MB.
  int64_t cacheMaxBytes = 0;
};

// A kernel made callable, and how: found in the cache or built now.
struct CpuKernelBuild {
  CpuKernelFn function = nullptr;
  bool fromCache = false;
  // Built: its library's compile (the host compiler's run), verification and load. From the
  // cache: reading, verifying and loading its library (near 0 when this process had it).
  double buildMs = 0;
  std::string isa; // the instruction set it was compiled for (CpuIsa::name)
};

class CpuCompiler {
public:
  explicit CpuCompiler(CpuCompilerOptions options = {});
  ~CpuCompiler();

  // Entry points of `kernels`, in order (identical kernels get the same function), each with
  // where it came from. Throws Error("codegen", ...) with the compiler's diagnostics and the
  // path of the kept source when compilation fails. Evicts from the cache when it built.
  std::vector<CpuKernelBuild> build(const std::vector<GeneratedKernel>& kernels);
  // The entry points alone.
  std::vector<CpuKernelFn> load(const std::vector<GeneratedKernel>& kernels);
  CpuKernelFn load(const GeneratedKernel& kernel) { return load(std::vector{kernel}).front(); }

  // The content key of `kernel`, and the cached library that holds it (empty when the cache
  // has no record of it, or the library is missing; its bytes are not checked here).
  std::string kernelKey(const GeneratedKernel& kernel) const;
  std::string libraryOf(const GeneratedKernel& kernel) const;
  // The cache folder in use: a private temporary one when the configured one was refused.
  // The cache is opened (its folder created) on first use, not by the constructor.
  const std::string& cacheDir() const { return cache().dir(); }
  int jobs() const { return jobs_; }
  const CpuIsa& isa() const { return isa_; }
  // How many times this instance ran the host compiler; a cache hit does not count.
  int compilerRuns() const { return compilerRuns_; }

private:
  struct Unit; // one translation unit being compiled
  std::string keyText(const GeneratedKernel& kernel) const;
  // The options' flags, then the instruction set's: what comes before the source.
  std::vector<std::string> compileCommandFlags() const;
  KernelCache& cache() const;
  void compileAll(std::vector<Unit>& units);

  CpuCompilerOptions options_;
  CpuIsa isa_;
  std::string compilerKey_; // the compiler, its flags, the instruction set and its --version
  mutable std::unique_ptr<KernelCache> cache_;
  int jobs_ = 1;
  int compilerRuns_ = 0;
};

} // namespace loupe
