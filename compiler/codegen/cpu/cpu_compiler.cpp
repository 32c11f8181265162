#include "compiler/codegen/cpu/cpu_compiler.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "compiler/ir/error.h"

extern char** environ;

namespace loupe {

namespace fs = std::filesystem;

namespace {

std::string defaultCacheDir() {
  if (const char* dir = std::getenv("LOUPE_CACHE_DIR"); dir && *dir)
    return (fs::path(dir) / "kernels").string();
  const char* home = std::getenv("HOME");
  return (fs::path(home && *home ? home : "/tmp") / ".cache" / "loupe" / "kernels").string();
}

std::string hashHex(const std::string& text) {
  // Two FNV-1a passes with different offsets: 128 bits, so collisions are not a concern.
  auto fnv = [&](uint64_t hash) {
    for (unsigned char c : text)
      hash = (hash ^ c) * 0x100000001b3ULL;
    return hash;
  };
  char buffer[33];
  std::snprintf(buffer, sizeof buffer, "%016llx%016llx",
                static_cast<unsigned long long>(fnv(0xcbf29ce484222325ULL)),
                static_cast<unsigned long long>(fnv(0x84222325cbf29ce4ULL)));
  return buffer;
}

// `<compiler> --version`, asked once per compiler per process.
std::string compilerVersion(const std::string& compiler) {
  static std::mutex mutex;
  static std::map<std::string, std::string> versions;
  std::lock_guard lock(mutex);
  auto [it, inserted] = versions.emplace(compiler, "");
  if (!inserted) return it->second;
  if (FILE* pipe = popen(("'" + compiler + "' --version 2>/dev/null").c_str(), "r")) {
    char buffer[256];
    while (size_t n = fread(buffer, 1, sizeof buffer, pipe))
      it->second.append(buffer, n);
    pclose(pipe);
  }
  return it->second;
}

std::string uniqueSuffix() {
  static std::atomic<int> counter{0};
  return ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter++);
}

// Writes through a temporary file and a rename, so readers see the whole file or none.
void writeAtomically(const fs::path& path, const std::string& text) {
  fs::path temporary = path.string() + uniqueSuffix();
  {
    std::ofstream out(temporary, std::ios::binary);
    out << text;
    if (!out) throw Error("codegen", "cannot write " + temporary.string());
  }
  fs::rename(temporary, path);
}

std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// Loaded libraries by path; never closed (see the header).
std::mutex& libraryMutex() {
  static std::mutex mutex;
  return mutex;
}

// The kernels' entry points, or an empty vector (and the loader's reason) when the file does
// not load as expected.
std::vector<CpuKernelFn> tryLoad(const std::string& library,
                                 const std::vector<GeneratedKernel>& kernels, std::string& why) {
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    why = dlerror();
    return {};
  }
  std::vector<CpuKernelFn> entries;
  for (const GeneratedKernel& kernel : kernels) {
    void* symbol = dlsym(handle, kernel.entry.c_str());
    if (!symbol) {
      why = "no symbol " + kernel.entry;
      dlclose(handle);
      return {};
    }
    entries.push_back(reinterpret_cast<CpuKernelFn>(symbol));
  }
  return entries;
}

} // namespace

CpuCompiler::CpuCompiler(CpuCompilerOptions options)
    : options_(std::move(options)),
      cacheDir_(options_.cacheDir.empty() ? defaultCacheDir() : options_.cacheDir),
      compilerVersion_(compilerVersion(options_.compiler)) {}

std::string CpuCompiler::translationUnit(const std::vector<GeneratedKernel>& kernels) const {
  std::string source;
  for (const GeneratedKernel& kernel : kernels)
    source += kernel.source + "\n";
  return source;
}

std::string CpuCompiler::libraryPath(const std::vector<GeneratedKernel>& kernels) const {
  std::string key = translationUnit(kernels) + "\n" + options_.compiler;
  for (const std::string& flag : options_.flags)
    key += " " + flag;
  key += "\n" + compilerVersion_;
  return (fs::path(cacheDir_) / (hashHex(key) + ".so")).string();
}

void CpuCompiler::compile(const std::string& source, const std::string& library) {
  fs::path sourcePath = fs::path(library).replace_extension(".cpp");
  writeAtomically(sourcePath, source);
  std::string temporary = library + uniqueSuffix();
  std::string log = temporary + ".log";

  std::vector<std::string> words{options_.compiler};
  words.insert(words.end(), options_.flags.begin(), options_.flags.end());
  words.insert(words.end(), {"-o", temporary, sourcePath.string()});
  std::vector<char*> argv;
  for (std::string& word : words)
    argv.push_back(word.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = 0;
  int spawnError = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  int status = 0;
  if (spawnError == 0) waitpid(pid, &status, 0);
  ++compilerRuns_;

  std::string diagnostics = readFile(log);
  std::error_code ignored;
  fs::remove(log, ignored);
  if (spawnError != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fs::remove(temporary, ignored);
    throw Error("codegen", (spawnError ? "cannot run the C++ compiler '" + options_.compiler + "'"
                                       : "the C++ compiler failed") +
                               " on " + sourcePath.string() + " (kept for inspection):\n" +
                               diagnostics);
  }
  fs::rename(temporary, library);
}

std::vector<CpuKernelFn> CpuCompiler::load(const std::vector<GeneratedKernel>& kernels) {
  if (kernels.empty()) return {};
  std::string library = libraryPath(kernels);
  std::lock_guard lock(libraryMutex());
  std::string why;
  if (fs::exists(library))
    if (auto entries = tryLoad(library, kernels, why); !entries.empty()) return entries;

  // Missing, or present but unloadable (a damaged cache file): build it (again).
  std::error_code error;
  fs::create_directories(cacheDir_, error);
  if (error)
    throw Error("codegen", "cannot create the kernel cache " + cacheDir_ + ": " + error.message());
  fs::remove(library, error);
  compile(translationUnit(kernels), library);
  auto entries = tryLoad(library, kernels, why);
  if (entries.empty()) throw Error("codegen", "cannot load " + library + ": " + why);
  return entries;
}

} // namespace loupe
