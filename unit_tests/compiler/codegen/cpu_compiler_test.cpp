// The kernel cache: hits skip the compiler, damaged files are rebuilt, failures are explained;
// a folder others could write is not used, a library that is not the one built never loads,
// links are not followed, and eviction keeps the limit.
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
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

using Binary = BinaryKernel;
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

namespace fs = std::filesystem;

std::string indexOf(const CpuCompiler& compiler, const GeneratedKernel& kernel) {
  return compiler.cacheDir() + "/" + compiler.kernelKey(kernel) + ".kernel";
}

void setModifiedAnHourAgo(const std::string& path) {
  timespec times[2];
  clock_gettime(CLOCK_REALTIME, &times[0]);
  times[0].tv_sec -= 3600;
  times[1] = times[0];
  ASSERT_EQ(utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW), 0) << path;
}

// The kernels run from a cache Loupe refused: the one stderr line names it and why, nothing is
// written into it.
void expectRefusedYetWorking(const std::string& folder, const std::string& why) {
  Multiply multiply;
  CpuCompilerOptions options;
  options.cacheDir = folder;
  ::testing::internal::CaptureStderr();
  CpuCompiler compiler(options);
  EXPECT_EQ(multiply.call(compiler.load(multiply.kernel("mul")), {1, 2}, 3),
            (std::vector<double>{3, 6}));
  EXPECT_NE(CpuCompiler(options).load(multiply.kernel("again")), nullptr);
  std::string warning = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(warning.find("loupe: warning: not using the kernel cache " + folder + ": " + why), 0u)
      << warning;
  EXPECT_EQ(std::count(warning.begin(), warning.end(), '\n'), 1) << warning;
  EXPECT_NE(compiler.cacheDir(), folder);
  EXPECT_TRUE(fs::is_empty(folder));
}

TEST(CpuCompiler, AFolderOfAnotherUserIsRefusedAndTheKernelsStillRun) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to give a folder to another user";
  ScratchFolder scratch;
  fs::create_directory(scratch / "theirs");
  ASSERT_EQ(chown((scratch / "theirs").c_str(), 65534, 65534), 0);
  expectRefusedYetWorking(scratch / "theirs", scratch / "theirs" + " is owned by uid 65534");
}

TEST(CpuCompiler, AWorldWritableFolderIsRefusedAndTheKernelsStillRun) {
  ScratchFolder scratch;
  fs::create_directory(scratch / "open");
  ASSERT_EQ(chmod((scratch / "open").c_str(), 0777), 0);
  expectRefusedYetWorking(scratch / "open",
                          scratch / "open" + " is writable by group or others (mode 0777)");
}

TEST(CpuCompiler, BuildsSayWhetherEachKernelCameFromTheCache) {
  Binary multiply("aten.mul.Tensor"), add("aten.add.Tensor");
  CpuCompilerOptions options = freshCache();
  CpuCompiler first(options);
  std::vector<CpuKernelBuild> built = first.build({multiply.kernel("a"), add.kernel("b")});
  ASSERT_EQ(built.size(), 2u);
  for (const CpuKernelBuild& kernel : built) {
    EXPECT_FALSE(kernel.fromCache);
    EXPECT_GT(kernel.buildMs, 0);
  }
  std::vector<CpuKernelBuild> found = CpuCompiler(options).build({add.kernel("c")});
  EXPECT_TRUE(found[0].fromCache);
  EXPECT_EQ(found[0].function, built[1].function); // the library this process loaded already
  EXPECT_EQ(add.call(found[0].function, {1}, 2), (std::vector<double>{3}));
}

// The instruction set is part of the key: a kernel compiled for the baseline is not the one for
// this machine's own level, each has a library of its own, both run, and each build says which
// it is.
TEST(CpuCompiler, TheInstructionSetIsPartOfTheKernelKey) {
  Multiply multiply;
  CpuCompilerOptions portableOptions = freshCache(), nativeOptions = freshCache();
  portableOptions.isa = "portable";
  nativeOptions.isa = "native";
  CpuCompiler portable(portableOptions), native(nativeOptions);
  EXPECT_EQ(portable.isa().name, "portable");
  EXPECT_EQ(native.isa().name, detectedCpuIsa().name);
  std::vector<CpuKernelBuild> portableBuild = portable.build({multiply.kernel("mul")});
  std::vector<CpuKernelBuild> nativeBuild = native.build({multiply.kernel("mul")});
  EXPECT_EQ(portableBuild[0].isa, "portable");
  EXPECT_EQ(nativeBuild[0].isa, detectedCpuIsa().name);
  EXPECT_EQ(multiply.call(portableBuild[0].function, {1, 2}, 3), (std::vector<double>{3, 6}));
  EXPECT_EQ(multiply.call(nativeBuild[0].function, {1, 2}, 3), (std::vector<double>{3, 6}));
  if (detectedCpuIsa().name == "portable") GTEST_SKIP() << "this machine runs the baseline only";
  EXPECT_NE(portable.kernelKey(multiply.kernel("mul")), native.kernelKey(multiply.kernel("mul")));
  EXPECT_NE(portable.libraryOf(multiply.kernel("mul")), native.libraryOf(multiply.kernel("mul")));
  EXPECT_EQ(native.compilerRuns(), 1) << "the portable library is not this level's";
}

// A library replaced by another that exports the same entry point (here one that adds instead
// of multiplying), its index unchanged: the digest differs, so it is rebuilt and never runs.
TEST(CpuCompiler, AReplacedLibraryIsRebuiltNeverLoaded) {
  Binary multiply("aten.mul.Tensor"), add("aten.add.Tensor");
  CpuCompilerOptions options = freshCache();
  CpuCompiler first(options);
  first.load(multiply.kernel("mul"));
  std::string library = first.libraryOf(multiply.kernel("mul"));

  ScratchFolder scratch;
  GeneratedKernel adder = add.kernel("adder");
  std::string source = adder.source, symbol = "loupe_k_" + first.kernelKey(multiply.kernel("x"));
  for (size_t at = source.find(adder.entry); at != std::string::npos;
       at = source.find(adder.entry, at + symbol.size()))
    source.replace(at, adder.entry.size(), symbol);
  std::ofstream(scratch / "impostor.cpp") << source;
  std::string command = "c++";
  for (const std::string& flag : options.flags)
    command += " " + flag;
  command += " -o " + scratch / "impostor.so" + " " + scratch / "impostor.cpp";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  void* impostor = dlopen((scratch / "impostor.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(impostor, nullptr) << dlerror();
  auto impostorFn = reinterpret_cast<CpuKernelFn>(dlsym(impostor, symbol.c_str()));
  ASSERT_NE(impostorFn, nullptr);
  ASSERT_EQ(multiply.call(impostorFn, {5}, 3), (std::vector<double>{8})) << "it would add";
  fs::copy_file(scratch / "impostor.so", library, fs::copy_options::overwrite_existing);

  CpuCompiler second(options);
  EXPECT_EQ(multiply.call(second.load(multiply.kernel("mul")), {5}, 3), (std::vector<double>{15}));
  EXPECT_EQ(second.compilerRuns(), 1);
  EXPECT_EQ(CpuCompiler(options).build({multiply.kernel("mul")})[0].fromCache, true)
      << "the rebuilt library is found again";
}

TEST(CpuCompiler, ALinkPlantedAsALibraryIsNotFollowed) {
  Multiply multiply;
  CpuCompilerOptions options = freshCache();
  CpuCompiler first(options);
  first.load(multiply.kernel("mul"));
  std::string library = first.libraryOf(multiply.kernel("mul"));
  ScratchFolder scratch;
  fs::copy_file(library, scratch / "elsewhere.so"); // the right bytes, but through a link
  fs::remove(library);
  fs::create_symlink(scratch / "elsewhere.so", library);

  CpuCompiler second(options);
  EXPECT_EQ(multiply.call(second.load(multiply.kernel("mul")), {2}, 4), (std::vector<double>{8}));
  EXPECT_EQ(second.compilerRuns(), 1);
  EXPECT_FALSE(fs::is_symlink(library)) << "the rebuild replaced the link";
}

TEST(CpuCompiler, ALinkPlantedAsAnIndexIsNotFollowed) {
  Multiply multiply;
  CpuCompilerOptions options = freshCache();
  CpuCompiler first(options);
  first.load(multiply.kernel("mul"));
  std::string index = indexOf(first, multiply.kernel("mul"));
  ScratchFolder scratch;
  fs::copy_file(index, scratch / "elsewhere.kernel");
  fs::remove(index);
  fs::create_symlink(scratch / "elsewhere.kernel", index);

  CpuCompiler second(options);
  EXPECT_EQ(second.libraryOf(multiply.kernel("mul")), "");
  EXPECT_EQ(multiply.call(second.load(multiply.kernel("mul")), {2}, 4), (std::vector<double>{8}));
  EXPECT_EQ(second.compilerRuns(), 1);
  EXPECT_FALSE(fs::is_symlink(index));
}

TEST(CpuCompiler, EvictionAfterABuildKeepsTheLimitAndRemovesWholeLibraries) {
  Binary multiply("aten.mul.Tensor"), add("aten.add.Tensor"), subtract("aten.sub.Tensor");
  CpuCompilerOptions options = freshCache();
  options.jobs = 1; // multiply and add: one library, named by two index files
  CpuCompiler first(options);
  first.load({multiply.kernel("a"), add.kernel("b")});
  std::vector<std::string> firstFiles{first.libraryOf(multiply.kernel("a")),
                                      indexOf(first, multiply.kernel("a")),
                                      indexOf(first, add.kernel("b"))};
  firstFiles.push_back(fs::path(firstFiles[0]).replace_extension(".cpp").string());
  for (const std::string& file : firstFiles)
    setModifiedAnHourAgo(file);
  const int64_t firstBytes = kernelCacheContents(first.cacheDir()).bytes;

  options.cacheMaxBytes = firstBytes; // room for one library: the older goes
  CpuCompiler second(options);
  EXPECT_EQ(subtract.call(second.load(subtract.kernel("c")), {5}, 2), (std::vector<double>{3}));
  for (const std::string& file : firstFiles)
    EXPECT_FALSE(fs::exists(file)) << file;
  EXPECT_NE(second.libraryOf(subtract.kernel("c")), "");
  KernelCacheContents left = kernelCacheContents(second.cacheDir());
  EXPECT_LE(left.bytes, firstBytes);
  EXPECT_EQ(left.artifacts, 1);
  EXPECT_EQ(left.indexes, 1);

  // Evicted kernels are built again when asked for; a hit alone evicts nothing.
  CpuCompiler third(options);
  EXPECT_EQ(multiply.call(third.load(multiply.kernel("a")), {5}, 2), (std::vector<double>{10}));
  EXPECT_EQ(third.compilerRuns(), 1);
}

TEST(CpuCompiler, AHitMarksItsLibraryUsed) {
  Multiply multiply;
  CpuCompilerOptions options = freshCache();
  CpuCompiler first(options);
  first.load(multiply.kernel("mul"));
  std::string library = first.libraryOf(multiply.kernel("mul"));
  setModifiedAnHourAgo(library);
  CpuCompiler(options).load(multiply.kernel("mul"));
  auto age = fs::file_time_type::clock::now() - fs::last_write_time(library);
  EXPECT_LT(age, std::chrono::minutes(1));
}

TEST(CpuCompiler, LaunchRejectsOperandsThatDoNotFitTheIterationSpace) {
  Multiply multiply;
  CpuKernelFn fn = CpuCompiler(freshCache()).load(multiply.kernel("mul"));
  Tensor x = Tensor::zeros(DType::F32, {4}), y = Tensor::zeros(DType::F32, {2});
  Tensor out = Tensor::empty(DType::F32, {4});
  EXPECT_THROW(launchCpuKernel(fn, describeKernel(*multiply.node), {{"n", 4}}, {&x, &y}, {&out}),
               Error);
}

} // namespace
} // namespace loupe::testing
