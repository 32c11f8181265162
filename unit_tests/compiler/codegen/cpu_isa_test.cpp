// The instruction set of generated kernels: the machine's own by default, a lower one by name or
// LOUPE_CPU_ISA, never one the machine cannot run; each compiles kernels that run.
#include <gtest/gtest.h>

#include "compiler/codegen/cpu/cpu_compiler.h"
#include "compiler/codegen/cpu/cpu_isa.h"
#include "compiler/ir/error.h"
#include "unit_tests/compiler/codegen/codegen_test_support.h"

namespace loupe::testing {
namespace {

const std::vector<std::string> kLevels = {"portable", "x86-64-v3", "x86-64-v4"};

std::string errorOf(const std::string& name) {
  try {
    cpuIsaNamed(name);
  } catch (const Error& error) {
    return error.message();
  }
  return "";
}

TEST(CpuIsa, NativeIsTheHighestLevelThisMachineRuns) {
  CpuIsa native = cpuIsaNamed("native");
  EXPECT_EQ(native.name, detectedCpuIsa().name);
  ASSERT_NE(std::find(kLevels.begin(), kLevels.end(), native.name), kLevels.end()) << native.name;
  auto rank = std::find(kLevels.begin(), kLevels.end(), native.name) - kLevels.begin();
  for (size_t level = 0; level < kLevels.size(); ++level) {
    SCOPED_TRACE(kLevels[level]);
    EXPECT_EQ(errorOf(kLevels[level]).empty(), static_cast<ptrdiff_t>(level) <= rank);
  }
  if (native.name != "x86-64-v4") {
    EXPECT_NE(
        errorOf("x86-64-v4").find("is not supported by this machine (it runs " + native.name + ")"),
        std::string::npos)
        << errorOf("x86-64-v4");
  }
}

TEST(CpuIsa, EachLevelNamesItsTargetInTheCompileFlags) {
  for (const std::string& level : {std::string("x86-64-v3"), std::string("x86-64-v4")}) {
    if (!errorOf(level).empty()) continue;
    std::vector<std::string> flags = cpuIsaNamed(level).compileFlags;
    EXPECT_NE(std::find(flags.begin(), flags.end(), "-march=" + level), flags.end()) << level;
  }
  CpuIsa portable = cpuIsaNamed("portable");
  for (const std::string& flag : portable.compileFlags)
    EXPECT_FALSE(flag.starts_with("-march=")) << flag;
  bool declaresVectorMath = std::find(portable.compileFlags.begin(), portable.compileFlags.end(),
                                      "-DLOUPE_VECTOR_MATH") != portable.compileFlags.end();
  bool linksLibmvec = std::find(portable.linkFlags.begin(), portable.linkFlags.end(), "-lmvec") !=
                      portable.linkFlags.end();
  EXPECT_EQ(declaresVectorMath, portable.vectorMath);
  EXPECT_EQ(linksLibmvec, portable.vectorMath);
}

TEST(CpuIsa, UnknownNamesAreRefusedWithTheKnownOnes) {
  EXPECT_EQ(errorOf("avx9"), "unknown CPU instruction set 'avx9' (known: native, " +
                                 std::string("portable, x86-64-v3, x86-64-v4)"));
}

TEST(CpuIsa, LoupeCpuIsaPicksTheLevelAndAnExplicitNameWins) {
  ScopedEnvironment environment;
  environment.set("LOUPE_CPU_ISA", "portable");
  EXPECT_EQ(configuredCpuIsa().name, "portable");
  EXPECT_EQ(CpuCompiler(CpuCompilerOptions{.cacheDir = testCacheDir()}).isa().name, "portable");
  EXPECT_EQ(configuredCpuIsa("native").name, detectedCpuIsa().name);
  environment.set("LOUPE_CPU_ISA", "avx9");
  EXPECT_THROW(configuredCpuIsa(), Error);
  environment.set("LOUPE_CPU_ISA", std::nullopt);
  EXPECT_EQ(configuredCpuIsa().name, detectedCpuIsa().name);
}

} // namespace
} // namespace loupe::testing
