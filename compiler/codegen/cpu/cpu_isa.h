// The instruction set generated CPU kernels are compiled for, and how their math vectorises.
//
// Kernels are compiled for the machine that runs them: the highest x86-64 microarchitecture
// level (GCC's -march names: x86-64-v3 is AVX2 and FMA, x86-64-v4 adds AVX-512) this CPU and its
// operating system support, detected once. The ISA is part of every kernel's cache key
// (cpu_compiler.h), so a cache folder shared between machines holds one library per ISA and never
// hands a machine code it cannot run. `LOUPE_CPU_ISA` (or CpuCompilerOptions::isa) picks a lower
// one; "portable" is the x86-64 baseline (SSE2), which every x86-64 machine runs.
//
// Transcendental functions (exp, log, log1p, expm1, sin, cos, tanh, erf, pow) vectorise through
// glibc's libmvec: the prelude declares them `omp declare simd` when the kernel is compiled with
// LOUPE_VECTOR_MATH, so GCC calls the vector variant for the ISA (_ZGVdN8v_expf for eight floats
// under AVX2, _ZGVeN16v_expf under AVX-512, _ZGVbN4v_expf on the baseline) in `omp simd` loops,
// and the kernel links libmvec. libmvec is part of glibc (2.35 and later have every function
// above) on x86-64; elsewhere kernels call the scalar functions, as before.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace loupe {

struct CpuIsa {
  std::string name;                      // "x86-64-v4", "x86-64-v3" or "portable"
  std::vector<std::string> compileFlags; // before the source: -march=..., -DLOUPE_VECTOR_MATH
  std::vector<std::string> linkFlags;    // after the source (so --as-needed keeps them): -lmvec
  bool vectorMath = false;               // transcendental functions through libmvec
};

// The highest ISA this machine runs (its CPU and the OS's saved register state).
CpuIsa detectedCpuIsa();
// The ISA called `name`: "native" (detectedCpuIsa()), "x86-64-v4", "x86-64-v3" or "portable".
// Throws Error("codegen", ...) for another name, or a level this machine cannot run.
CpuIsa cpuIsaNamed(std::string_view name);
// `name` when not empty, else $LOUPE_CPU_ISA when set, else "native".
CpuIsa configuredCpuIsa(std::string_view name = {});

} // namespace loupe
