// Detecting and naming the instruction set of generated CPU kernels (cpu_isa.h).
#include "compiler/codegen/cpu/cpu_isa.h"

#include <cstdlib>

#include "compiler/ir/error.h"

namespace loupe {

namespace {

// libmvec has every function the prelude vectorises from glibc 2.35 on, on x86-64 only.
#if defined(__x86_64__) && defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 35)
constexpr bool kVectorMath = true;
#else
constexpr bool kVectorMath = false;
#endif

struct IsaLevel {
  const char* name;
  const char* march; // null: the compiler's default target
  bool (*runs)();
};

// Lowest first. GCC's __builtin_cpu_supports knows the levels by these names and checks that
// the OS saves the AVX and AVX-512 registers, not only that the CPU has them.
#if defined(__x86_64__)
const IsaLevel kLevels[] = {
    {"portable", nullptr, [] { return true; }},
    {"x86-64-v3", "-march=x86-64-v3", [] { return __builtin_cpu_supports("x86-64-v3") != 0; }},
    {"x86-64-v4", "-march=x86-64-v4", [] { return __builtin_cpu_supports("x86-64-v4") != 0; }},
};
#else
const IsaLevel kLevels[] = {{"portable", nullptr, [] { return true; }}};
#endif

CpuIsa isaOf(const IsaLevel& level) {
  CpuIsa isa{level.name, {}, {}, kVectorMath};
  if (level.march) isa.compileFlags.push_back(level.march);
  if (kVectorMath) {
    isa.compileFlags.push_back("-DLOUPE_VECTOR_MATH");
    isa.linkFlags.push_back("-lmvec");
  }
  return isa;
}

} // namespace

CpuIsa detectedCpuIsa() {
  static const CpuIsa detected = [] {
    __builtin_cpu_init();
    const IsaLevel* best = &kLevels[0];
    for (const IsaLevel& level : kLevels)
      if (level.runs()) best = &level;
    return isaOf(*best);
  }();
  return detected;
}

CpuIsa cpuIsaNamed(std::string_view name) {
  if (name == "native") return detectedCpuIsa();
  std::string known = "native";
  for (const IsaLevel& level : kLevels) {
    if (name == level.name) {
      __builtin_cpu_init();
      if (!level.runs())
        throw Error("codegen", "the CPU instruction set " + std::string(name) +
                                   " is not supported by this machine (it runs " +
                                   detectedCpuIsa().name + ")");
      return isaOf(level);
    }
    known += std::string(", ") + level.name;
  }
  throw Error("codegen",
              "unknown CPU instruction set '" + std::string(name) + "' (known: " + known + ")");
}

CpuIsa configuredCpuIsa(std::string_view name) {
  if (!name.empty()) return cpuIsaNamed(name);
  const char* configured = std::getenv("LOUPE_CPU_ISA");
  return cpuIsaNamed(configured && *configured ? configured : "native");
}

} // namespace loupe
