// Turns generated kernels into callable functions: one translation unit per batch of kernels,
// compiled by the host C++ compiler into a shared object that is cached on disk under a hash
// of everything that determines its contents, then dlopen'ed.
//
// Cache files are written to a temporary name and renamed into place, so processes sharing a
// cache never see a half-written library. A cached library that fails to load (truncated,
// corrupted) is rebuilt. Loaded libraries stay loaded for the life of the process, so kernel
// pointers never dangle.
#pragma once

#include <string>
#include <vector>

#include "compiler/codegen/cpu/cpu_codegen.h"
#include "compiler/codegen/cpu/cpu_kernel_abi.h"

namespace loupe {

struct CpuCompilerOptions {
  std::string cacheDir; // empty: ${LOUPE_CACHE_DIR:-$HOME/.cache/loupe}/kernels
  std::string compiler = "c++";
  // No -march=native: a cache directory may be shared between machines.
  std::vector<std::string> flags = {"-O3",     "-fno-math-errno", "-std=c++17",
                                    "-shared", "-fPIC",           "-fopenmp"};
};

class CpuCompiler {
public:
  explicit CpuCompiler(CpuCompilerOptions options = {});

  // Entry points of `kernels`, in order, from one shared object. Throws Error("codegen", ...)
  // with the compiler's diagnostics and the path of the kept source when compilation fails.
  std::vector<CpuKernelFn> load(const std::vector<GeneratedKernel>& kernels);
  CpuKernelFn load(const GeneratedKernel& kernel) { return load(std::vector{kernel}).front(); }

  // Where the shared object for `kernels` lives in the cache (whether or not it exists yet).
  std::string libraryPath(const std::vector<GeneratedKernel>& kernels) const;
  const std::string& cacheDir() const { return cacheDir_; }
  // How many times this instance ran the host compiler; a cache hit does not count.
  int compilerRuns() const { return compilerRuns_; }

private:
  std::string translationUnit(const std::vector<GeneratedKernel>& kernels) const;
  void compile(const std::string& source, const std::string& library);

  CpuCompilerOptions options_;
  std::string cacheDir_;
  std::string compilerVersion_;
  int compilerRuns_ = 0;
};

} // namespace loupe
