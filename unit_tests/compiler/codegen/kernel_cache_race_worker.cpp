// One process of the KernelCacheRace test: builds the same kernels as its siblings, at the same
// time, into the cache folder it is given, and checks every result.
//
//     kernel_cache_race_worker FOLDER            build (or find) the kernels and run them
//     kernel_cache_race_worker FOLDER --cached   the same, and fail if anything was compiled
//
// Exit status 0: every kernel loaded and computed the right values.
#include <cstdio>
#include <cstring>
#include <exception>

#include "compiler/codegen/cpu/cpu_compiler.h"
#include "unit_tests/compiler/codegen/codegen_test_support.h"

int main(int argc, char** argv) {
  using namespace loupe;
  using loupe::testing::BinaryKernel;
  if (argc < 2 || argc > 3 || (argc == 3 && std::strcmp(argv[2], "--cached") != 0)) {
    std::fprintf(stderr, "usage: %s FOLDER [--cached]\n", argv[0]);
    return 2;
  }
  try {
    BinaryKernel multiply("aten.mul.Tensor"), add("aten.add.Tensor"), subtract("aten.sub.Tensor"),
        divide("aten.div.Tensor");
    CpuCompilerOptions options;
    options.cacheDir = argv[1];
    options.jobs = 2; // two libraries, each holding two of the kernels
    CpuCompiler compiler(options);
    std::vector<CpuKernelFn> functions = compiler.load(
        {multiply.kernel("a"), add.kernel("b"), subtract.kernel("c"), divide.kernel("d")});
    struct Expected {
      const BinaryKernel& kernel;
      std::vector<double> result;
    };
    std::vector<Expected> expected{
        {multiply, {8, -4}}, {add, {6, 0}}, {subtract, {2, -4}}, {divide, {2, -1}}};
    int failures = 0;
    for (size_t i = 0; i < expected.size(); ++i) {
      if (expected[i].kernel.call(functions[i], {4, -2}, 2) == expected[i].result) continue;
      std::fprintf(stderr, "kernel %zu computed a wrong result\n", i);
      ++failures;
    }
    if (argc == 3 && compiler.compilerRuns() != 0) {
      std::fprintf(stderr, "the cache did not have every kernel: %d compiler runs\n",
                   compiler.compilerRuns());
      ++failures;
    }
    return failures == 0 ? 0 : 1;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s\n", error.what());
    return 1;
  }
}
