#include "compiler/codegen/cpu/cpu_compiler.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sched.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <numeric>
#include <set>
#include <sstream>
#include <thread>

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

CpuCompilerOptions withDefaults(CpuCompilerOptions options) {
  if (options.compiler.empty()) {
    const char* compiler = std::getenv("LOUPE_CXX");
    options.compiler = compiler && *compiler ? compiler : "c++";
  }
  return options;
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

// Cores this process may run on (its affinity mask, so a container's limit counts).
int usableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

int jobsFor(int requested) {
  if (requested > 0) return requested;
  if (const char* text = std::getenv("LOUPE_COMPILE_JOBS"); text && *text) {
    char* end = nullptr;
    long jobs = std::strtol(text, &end, 10);
    if (*end || jobs < 1 || jobs > 1024)
      throw Error("codegen", "LOUPE_COMPILE_JOBS must be a whole number from 1 to 1024, got '" +
                                 std::string(text) + "'");
    return static_cast<int>(jobs);
  }
  return usableCores();
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

bool isIdentifierChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// `source` with every whole-identifier occurrence of `name` replaced by `replacement`.
std::string renameIdentifier(const std::string& source, const std::string& name,
                             const std::string& replacement) {
  std::string out;
  size_t from = 0;
  for (size_t at = source.find(name); at != std::string::npos; at = source.find(name, at + 1)) {
    bool starts = at == 0 || !isIdentifierChar(source[at - 1]);
    bool ends = at + name.size() == source.size() || !isIdentifierChar(source[at + name.size()]);
    if (!starts || !ends) continue;
    out.append(source, from, at - from).append(replacement);
    from = at + name.size();
  }
  return out.append(source, from);
}

std::string symbolFor(const std::string& key) {
  return "loupe_k_" + key;
}

// Serialises loading: dlopen/dlsym and the cache files of one process.
std::mutex& libraryMutex() {
  static std::mutex mutex;
  return mutex;
}

// The entry point `symbol` of the shared object at `library`, or null when it does not load
// as expected. Loaded libraries are never closed (see the header).
CpuKernelFn loadSymbol(const std::string& library, const std::string& symbol) {
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) return nullptr;
  return reinterpret_cast<CpuKernelFn>(dlsym(handle, symbol.c_str()));
}

} // namespace

struct CpuCompiler::Unit {
  std::vector<size_t> kernels; // indices into load()'s argument
  size_t bytes = 0;
  std::string source;  // the kernels under their content-keyed names
  std::string library; // <cacheDir>/<hash of source and compiler>.so
};

CpuCompiler::CpuCompiler(CpuCompilerOptions options)
    : options_(withDefaults(std::move(options))),
      cacheDir_(options_.cacheDir.empty() ? defaultCacheDir() : options_.cacheDir),
      compilerVersion_(compilerVersion(options_.compiler)), jobs_(jobsFor(options_.jobs)) {}

std::string CpuCompiler::kernelKey(const GeneratedKernel& kernel) const {
  // '@' cannot occur in an identifier, so the abstracted name cannot collide with the source.
  std::string key = renameIdentifier(kernel.source, kernel.entry, "@") + "\n" + options_.compiler;
  for (const std::string& flag : options_.flags)
    key += " " + flag;
  return hashHex(key + "\n" + compilerVersion_);
}

std::string CpuCompiler::libraryOf(const GeneratedKernel& kernel) const {
  return libraryForKey(kernelKey(kernel));
}

std::string CpuCompiler::libraryForKey(const std::string& key) const {
  fs::path index = fs::path(cacheDir_) / (key + ".kernel");
  std::error_code error;
  if (!fs::exists(index, error)) return "";
  std::string name = readFile(index);
  if (name.empty() || name.find('/') != std::string::npos) return "";
  fs::path library = fs::path(cacheDir_) / name;
  return fs::exists(library, error) ? library.string() : "";
}

void CpuCompiler::compileAll(std::vector<Unit>& units) {
  struct Running {
    Unit* unit;
    std::string sourcePath, temporary, log;
    pid_t pid = 0;
    int spawnError = 0;
  };
  std::vector<Running> running;
  for (Unit& unit : units) {
    Running run{&unit, fs::path(unit.library).replace_extension(".cpp").string(),
                unit.library + uniqueSuffix(), ""};
    run.log = run.temporary + ".log";
    writeAtomically(run.sourcePath, unit.source);
    std::vector<std::string> words{options_.compiler};
    words.insert(words.end(), options_.flags.begin(), options_.flags.end());
    words.insert(words.end(), {"-o", run.temporary, run.sourcePath});
    std::vector<char*> argv;
    for (std::string& word : words)
      argv.push_back(word.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, run.log.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    run.spawnError = posix_spawnp(&run.pid, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ++compilerRuns_;
    running.push_back(std::move(run));
  }

  // Wait for every compiler before reporting, so none is left writing into the cache.
  std::string failure;
  for (Running& run : running) {
    int status = 0;
    if (run.spawnError == 0) waitpid(run.pid, &status, 0);
    std::string diagnostics = readFile(run.log);
    std::error_code ignored;
    fs::remove(run.log, ignored);
    if (run.spawnError != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fs::remove(run.temporary, ignored);
      if (failure.empty())
        failure = (run.spawnError ? "cannot run the C++ compiler '" + options_.compiler + "'"
                                  : std::string("the C++ compiler failed")) +
                  " on " + run.sourcePath + " (kept for inspection):\n" + diagnostics;
      continue;
    }
    fs::rename(run.temporary, run.unit->library);
  }
  if (!failure.empty()) throw Error("codegen", failure);
}

std::vector<CpuKernelFn> CpuCompiler::load(const std::vector<GeneratedKernel>& kernels) {
  std::vector<CpuKernelFn> functions(kernels.size(), nullptr);
  if (kernels.empty()) return functions;
  std::lock_guard lock(libraryMutex());

  // Hits first; each distinct missing kernel once.
  std::vector<std::string> keys;
  std::map<std::string, CpuKernelFn> loaded;
  std::vector<size_t> missing;
  std::set<std::string> missingKeys;
  for (size_t i = 0; i < kernels.size(); ++i) {
    keys.push_back(kernelKey(kernels[i]));
    const std::string& key = keys.back();
    if (loaded.count(key) || missingKeys.count(key)) continue;
    std::string library = libraryForKey(key);
    if (CpuKernelFn fn = library.empty() ? nullptr : loadSymbol(library, symbolFor(key)))
      loaded[key] = fn;
    else if (missingKeys.insert(key).second)
      missing.push_back(i);
  }

  if (!missing.empty()) {
    std::error_code error;
    fs::create_directories(cacheDir_, error);
    if (error)
      throw Error("codegen",
                  "cannot create the kernel cache " + cacheDir_ + ": " + error.message());
    // Largest first into the lightest unit: units of about equal size finish together.
    std::vector<Unit> units(std::min(missing.size(), static_cast<size_t>(jobs_)));
    std::stable_sort(missing.begin(), missing.end(), [&](size_t a, size_t b) {
      return kernels[a].source.size() > kernels[b].source.size();
    });
    for (size_t i : missing) {
      Unit& unit = *std::min_element(units.begin(), units.end(), [](const Unit& a, const Unit& b) {
        return a.bytes < b.bytes;
      });
      unit.kernels.push_back(i);
      unit.bytes += kernels[i].source.size();
    }
    std::string compilerKey = options_.compiler;
    for (const std::string& flag : options_.flags)
      compilerKey += " " + flag;
    compilerKey += "\n" + compilerVersion_;
    std::vector<Unit> toCompile;
    for (Unit& unit : units) {
      // Ordered by key, so the same kernels make the same unit whatever order they came in.
      std::sort(unit.kernels.begin(), unit.kernels.end(),
                [&](size_t a, size_t b) { return keys[a] < keys[b]; });
      for (size_t i : unit.kernels)
        unit.source +=
            renameIdentifier(kernels[i].source, kernels[i].entry, symbolFor(keys[i])) + "\n";
      unit.library =
          (fs::path(cacheDir_) / (hashHex(unit.source + "\n" + compilerKey) + ".so")).string();
      // Another process may have built this unit without recording its kernels yet.
      bool built = fs::exists(unit.library, error) &&
                   std::all_of(unit.kernels.begin(), unit.kernels.end(), [&](size_t i) {
                     return loadSymbol(unit.library, symbolFor(keys[i])) != nullptr;
                   });
      if (!built) toCompile.push_back(unit);
    }
    compileAll(toCompile);
    for (Unit& unit : units)
      for (size_t i : unit.kernels) {
        CpuKernelFn fn = loadSymbol(unit.library, symbolFor(keys[i]));
        if (!fn) {
          const char* why = dlerror();
          throw Error("codegen", "cannot load " + symbolFor(keys[i]) + " from " + unit.library +
                                     ": " + (why ? why : "no such symbol"));
        }
        loaded[keys[i]] = fn;
        writeAtomically(fs::path(cacheDir_) / (keys[i] + ".kernel"),
                        fs::path(unit.library).filename().string());
      }
  }

  for (size_t i = 0; i < kernels.size(); ++i)
    functions[i] = loaded.at(keys[i]);
  return functions;
}

} // namespace loupe
