// The kernel cache: hits skip the compiler, damaged files are rebuilt, failures are explained.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "compiler/codegen/cpu/cpu_compiler.h"
#include "compiler/ir/error.h"
#include "unit_tests/compiler/codegen/codegen_test_support.h"

namespace loupe::testing {
namespace {

std::string readText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A cache directory of its own for each test, so that hits and misses are this test's.
CpuCompilerOptions freshCache() {
  CpuCompilerOptions options;
  options.cacheDir =
      testCacheDir() + "/" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
  return options;
}

// The kernel of out = a <op> b for f32[n] and b f32[1], with its signature.
struct Binary {
  Graph graph{"binary"};
  Node* node;
  explicit Binary(const std::string& op = "aten.mul.Tensor") {
    Value* a = graph.addInput(tensorType(DType::F32, {SymExpr::symbol("n")}), "a");
    Value* b = graph.addInput(tensorType(DType::F32, {1}), "b");
    node = GraphBuilder(graph, nullptr).op(op, {a, b})->definingNode();
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
using Multiply = Binary;

TEST(CpuCompiler, ASecondLoadIsACacheHit) {
  Multiply multiply;
  CpuCompilerOptions options = freshCache();
  CpuCompiler first(options);
  EXPECT_EQ(multiply.call(first.load(multiply.kernel("mul")), {1, 2, 3}, 2),
            (std::vector<double>{2, 4, 6}));
  EXPECT_EQ(first.compilerRuns(), 1);
  EXPECT_TRUE(std::filesystem::exists(first.libraryOf(multiply.kernel("mul"))));

  CpuCompiler second(options); // as another process would
  EXPECT_EQ(multiply.call(second.load(multiply.kernel("mul")), {4}, -1), (std::vector<double>{-4}));
  EXPECT_EQ(second.compilerRuns(), 0);
}

TEST(CpuCompiler, RebuildsADamagedCacheFile) {
  Multiply multiply;
  CpuCompilerOptions options = freshCache();
  std::string library;
  {
    CpuCompiler compiler(options);
    compiler.load(multiply.kernel("mul"));
    library = compiler.libraryOf(multiply.kernel("mul"));
  }
  // Another cache directory's copy of the same entries, damaged, as a crash or a full disk
  // would leave it; this process has not loaded it.
  options.cacheDir += "-damaged";
  std::filesystem::create_directories(options.cacheDir);
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(library).parent_path()))
    std::filesystem::copy(entry.path(), options.cacheDir);
  std::string damaged = options.cacheDir + "/" + std::filesystem::path(library).filename().string();
  std::ofstream(damaged, std::ios::trunc) << "\x7f"
                                             "ELF truncated";
  CpuCompiler compiler(options);
  EXPECT_EQ(multiply.call(compiler.load(multiply.kernel("mul")), {5}, 3),
            (std::vector<double>{15}));
  EXPECT_EQ(compiler.compilerRuns(), 1);
}

TEST(CpuCompiler, IdenticalKernelsUnderDifferentNamesCompileOnce) {
  Multiply multiply;
  CpuCompiler compiler(freshCache());
  std::vector<CpuKernelFn> functions =
      compiler.load({multiply.kernel("one"), multiply.kernel("two")});
  ASSERT_EQ(functions.size(), 2u);
  EXPECT_EQ(functions[0], functions[1]);
  EXPECT_EQ(multiply.call(functions[1], {1.5}, 2), (std::vector<double>{3}));
  EXPECT_EQ(compiler.compilerRuns(), 1);
  EXPECT_EQ(compiler.kernelKey(multiply.kernel("one")), compiler.kernelKey(multiply.kernel("two")));
}

TEST(CpuCompiler, AKernelCompiledForAnEarlierGraphIsNotCompiledAgain) {
  Binary multiply("aten.mul.Tensor"), add("aten.add.Tensor"), subtract("aten.sub.Tensor");
  CpuCompilerOptions options = freshCache();
  options.jobs = 1;
  CpuCompiler first(options);
  first.load({multiply.kernel("k1"), add.kernel("k2")});
  EXPECT_EQ(first.compilerRuns(), 1);

  CpuCompiler second(options); // another graph, in another process
  std::vector<CpuKernelFn> functions =
      second.load({subtract.kernel("k7"), add.kernel("k8"), multiply.kernel("k9")});
  EXPECT_EQ(second.compilerRuns(), 1); // subtraction only
  EXPECT_EQ(subtract.call(functions[0], {5}, 2), (std::vector<double>{3}));
  EXPECT_EQ(add.call(functions[1], {5}, 2), (std::vector<double>{7}));
  EXPECT_EQ(multiply.call(functions[2], {5}, 2), (std::vector<double>{10}));
  EXPECT_NE(second.libraryOf(subtract.kernel("k7")), second.libraryOf(add.kernel("k8")));
}

TEST(CpuCompiler, MissingKernelsCompileAsSeveralUnitsAtOnce) {
  Binary multiply("aten.mul.Tensor"), add("aten.add.Tensor"), subtract("aten.sub.Tensor");
  CpuCompilerOptions options = freshCache();
  options.jobs = 2;
  CpuCompiler compiler(options);
  EXPECT_EQ(compiler.jobs(), 2);
  std::vector<CpuKernelFn> functions =
      compiler.load({multiply.kernel("a"), add.kernel("b"), subtract.kernel("c")});
  EXPECT_EQ(compiler.compilerRuns(), 2);
  EXPECT_EQ(multiply.call(functions[0], {1, 2}, 3), (std::vector<double>{3, 6}));
  EXPECT_EQ(add.call(functions[1], {1, 2}, 3), (std::vector<double>{4, 5}));
  EXPECT_EQ(subtract.call(functions[2], {1, 2}, 3), (std::vector<double>{-2, -1}));
  std::set<std::string> libraries{compiler.libraryOf(multiply.kernel("a")),
                                  compiler.libraryOf(add.kernel("b")),
                                  compiler.libraryOf(subtract.kernel("c"))};
  EXPECT_EQ(libraries.size(), 2u);
}

TEST(CpuCompiler, ARecordNamingAMissingLibraryIsRebuilt) {
  Multiply multiply;
  CpuCompilerOptions options = freshCache();
  std::string library;
  {
    CpuCompiler compiler(options);
    compiler.load(multiply.kernel("mul"));
    library = compiler.libraryOf(multiply.kernel("mul"));
  }
  std::filesystem::remove(library);
  CpuCompiler compiler(options);
  EXPECT_EQ(compiler.libraryOf(multiply.kernel("mul")), "");
  EXPECT_EQ(multiply.call(compiler.load(multiply.kernel("mul")), {2}, 4), (std::vector<double>{8}));
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
    size_t at = error.message().find(compiler.cacheDir());
    ASSERT_NE(at, std::string::npos) << error.message();
    std::string source = error.message().substr(at, error.message().find(' ', at) - at);
    EXPECT_EQ(std::filesystem::path(source).extension(), ".cpp");
    EXPECT_NE(readText(source).find("undeclared_name"), std::string::npos) << source;
  }
}

TEST(CpuCompiler, LoupeCompileJobsMustBeAPositiveNumber) {
  ::setenv("LOUPE_COMPILE_JOBS", "3", 1);
  EXPECT_EQ(CpuCompiler(freshCache()).jobs(), 3);
  ::setenv("LOUPE_COMPILE_JOBS", "many", 1);
  try {
    CpuCompiler compiler(freshCache());
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(error.message().find("LOUPE_COMPILE_JOBS"), std::string::npos);
    EXPECT_NE(error.message().find("'many'"), std::string::npos);
  }
  ::unsetenv("LOUPE_COMPILE_JOBS");
  EXPECT_GE(CpuCompiler(freshCache()).jobs(), 1);
}

TEST(CpuCompiler, LoupeCxxNamesTheHostCompiler) {
  Multiply multiply;
  ::setenv("LOUPE_CXX", "/nonexistent/c++", 1);
  CpuCompiler compiler(freshCache());
  ::unsetenv("LOUPE_CXX");
  try {
    compiler.load(multiply.kernel("mul"));
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(error.message().find("cannot run the C++ compiler '/nonexistent/c++'"),
              std::string::npos)
        << error.message();
  }
  CpuCompilerOptions named = freshCache();
  named.compiler = "c++"; // an explicit choice wins over the environment
  ::setenv("LOUPE_CXX", "/nonexistent/c++", 1);
  CpuCompiler explicitCompiler(named);
  ::unsetenv("LOUPE_CXX");
  EXPECT_EQ(multiply.call(explicitCompiler.load(multiply.kernel("mul")), {2}, 4),
            (std::vector<double>{8}));
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
