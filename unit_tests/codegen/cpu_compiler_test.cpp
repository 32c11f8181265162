// The kernel cache: hits skip the compiler, damaged files are rebuilt, failures are explained.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "compiler/codegen/cpu/cpu_compiler.h"
#include "compiler/ir/error.h"
#include "unit_tests/codegen/codegen_test_support.h"

namespace loupe::testing {
namespace {

// A cache directory of its own for each test, so that hits and misses are this test's.
CpuCompilerOptions freshCache() {
  CpuCompilerOptions options;
  options.cacheDir =
      testCacheDir() + "/" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
  return options;
}

// The kernel of out = a * b + a for f32[n], with its signature.
struct Multiply {
  Graph graph{"multiply"};
  Node* node;
  Multiply() {
    Value* a = graph.addInput(tensorType(DType::F32, {SymExpr::symbol("n")}), "a");
    Value* b = graph.addInput(tensorType(DType::F32, {1}), "b");
    node = GraphBuilder(graph, nullptr).op("aten.mul.Tensor", {a, b})->definingNode();
  }
  GeneratedKernel kernel(const std::string& name) const { return generateCpuKernel(*node, name); }
  std::vector<double> call(CpuKernelFn fn, std::vector<double> a, double b) const {
    Tensor x = Tensor::fromDoubles(a, DType::F32, {static_cast<int64_t>(a.size())});
    Tensor y = Tensor::fromDoubles({b}, DType::F32, {1});
    Tensor out = Tensor::empty(DType::F32, x.shape());
    launchCpuKernel(fn, describeCpuKernel(*node), {{"n", x.size(0)}}, {&x, &y}, {&out});
    return out.toDoubles();
  }
};

TEST(CpuCompiler, ASecondLoadIsACacheHit) {
  Multiply multiply;
  CpuCompilerOptions options = freshCache();
  CpuCompiler first(options);
  EXPECT_EQ(multiply.call(first.load(multiply.kernel("mul")), {1, 2, 3}, 2),
            (std::vector<double>{2, 4, 6}));
  EXPECT_EQ(first.compilerRuns(), 1);
  EXPECT_TRUE(std::filesystem::exists(first.libraryPath({multiply.kernel("mul")})));

  CpuCompiler second(options); // as another process would
  EXPECT_EQ(multiply.call(second.load(multiply.kernel("mul")), {4}, -1), (std::vector<double>{-4}));
  EXPECT_EQ(second.compilerRuns(), 0);
}

TEST(CpuCompiler, RebuildsADamagedCacheFile) {
  Multiply multiply;
  CpuCompilerOptions options = freshCache();
  CpuCompiler compiler(options);
  std::string library = compiler.libraryPath({multiply.kernel("mul")});
  std::filesystem::create_directories(compiler.cacheDir());
  std::ofstream(library) << "\x7f"
                            "ELF truncated";
  EXPECT_EQ(multiply.call(compiler.load(multiply.kernel("mul")), {5}, 3),
            (std::vector<double>{15}));
  EXPECT_EQ(compiler.compilerRuns(), 1);
}

TEST(CpuCompiler, CompilesABatchOfKernelsInOneRun) {
  Multiply multiply;
  CpuCompiler compiler(freshCache());
  std::vector<CpuKernelFn> functions =
      compiler.load({multiply.kernel("one"), multiply.kernel("two")});
  ASSERT_EQ(functions.size(), 2u);
  EXPECT_NE(functions[0], functions[1]);
  EXPECT_EQ(multiply.call(functions[1], {1.5}, 2), (std::vector<double>{3}));
  EXPECT_EQ(compiler.compilerRuns(), 1);
}

TEST(CpuCompiler, ACompilerErrorQuotesTheDiagnosticsAndKeepsTheSource) {
  CpuCompiler compiler(freshCache());
  GeneratedKernel broken{"broken", "extern \"C\" void broken() { undeclared_name(); }\n"};
  try {
    compiler.load(broken);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), "codegen");
    EXPECT_NE(error.message().find("undeclared_name"), std::string::npos) << error.message();
    std::string source =
        std::filesystem::path(compiler.libraryPath({broken})).replace_extension(".cpp");
    EXPECT_NE(error.message().find(source), std::string::npos) << error.message();
    EXPECT_TRUE(std::filesystem::exists(source));
  }
}

TEST(CpuCompiler, LaunchRejectsOperandsThatDoNotFitTheIterationSpace) {
  Multiply multiply;
  CpuKernelFn fn = CpuCompiler(freshCache()).load(multiply.kernel("mul"));
  Tensor x = Tensor::zeros(DType::F32, {4}), y = Tensor::zeros(DType::F32, {2});
  Tensor out = Tensor::empty(DType::F32, {4});
  EXPECT_THROW(launchCpuKernel(fn, describeCpuKernel(*multiply.node), {{"n", 4}}, {&x, &y}, {&out}),
               Error);
}

} // namespace
} // namespace loupe::testing
