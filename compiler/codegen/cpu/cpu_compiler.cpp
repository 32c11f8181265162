#include "compiler/codegen/cpu/cpu_compiler.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sched.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include "compiler/codegen/file_descriptor.h"
#include "compiler/codegen/sha256.h"
#include "compiler/ir/error.h"

extern char** environ;

namespace loupe {

namespace fs = std::filesystem;

namespace {

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

double msSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U // Linux 6.3: asks for an executable memfd where the default is not
#endif

// A file in memory, in no folder: how the compiler gets its source and gives its diagnostics,
// and how verified bytes reach dlopen. `bytes` are written and the file sealed against change.
FileDescriptor memoryFile(const char* name, std::string_view bytes, unsigned flags) {
  FileDescriptor file(memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING | flags));
  if (!file.valid() && errno == EINVAL && (flags & MFD_EXEC)) // a kernel older than MFD_EXEC
    file = FileDescriptor(memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!file.valid())
    throw Error("codegen", std::string("cannot create an in-memory file: ") + std::strerror(errno));
  if (bytes.empty()) return file; // written by someone else: left unsealed
  if (!writeAll(file.get(), bytes))
    throw Error("codegen", std::string("cannot fill an in-memory file: ") + std::strerror(errno));
  fcntl(file.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
  lseek(file.get(), 0, SEEK_SET);
  return file;
}

// What a compiler wrote into `file` (its output, shared with this process's descriptor).
std::string diagnosticsIn(const FileDescriptor& file) {
  lseek(file.get(), 0, SEEK_SET);
  return readAll(file.get(), int64_t(1) << 24).value_or("(the compiler's output is unreadable)");
}

// Libraries this process has loaded, by the SHA-256 of their bytes: each is loaded once
// however many caches and builds hand it over, and never unloaded.
struct LoadedLibraries {
  std::map<std::string, void*> bySha256;
  std::set<void*> handles;
  // dlopen returns the object already loaded under the same name, and a closed descriptor's
  // number is given out again: "/proc/self/fd/./N" names what "/proc/self/fd/N" named before,
  // so each use of a number adds a "./" and every name is new.
  std::map<int, int> usesOfNumber;
};
LoadedLibraries& loadedLibraries() {
  static LoadedLibraries libraries;
  return libraries;
}

// Loads `artifact` from a sealed in-memory copy of its verified bytes: what runs is what was
// hashed, whatever happens to the cache's file. Null, with the reason in `why`, when it does
// not load. Called under libraryMutex().
void* loadLibrary(const CachedArtifact& artifact, std::string& why) {
  LoadedLibraries& loaded = loadedLibraries();
  if (auto it = loaded.bySha256.find(artifact.sha256); it != loaded.bySha256.end())
    return it->second;
  FileDescriptor file = memoryFile(("loupe:" + artifact.name).c_str(), artifact.bytes, MFD_EXEC);
  // Past a few hundred uses of a number its name gets long: move to a higher, fresher one.
  while (loaded.usesOfNumber[file.get()] > 500) {
    FileDescriptor moved(fcntl(file.get(), F_DUPFD_CLOEXEC, file.get() + 1));
    if (!moved.valid()) break;
    file = std::move(moved); // the old number closes with `moved`
  }
  std::string path = "/proc/self/fd/";
  for (int i = 0, n = loaded.usesOfNumber[file.get()]++; i < n; ++i)
    path += "./";
  path += std::to_string(file.get());
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* error = dlerror();
    why = error ? error : "dlopen failed";
    return nullptr;
  }
  if (!loaded.handles.insert(handle).second) { // another library already had this name
    dlclose(handle);
    why = "dlopen returned a library loaded earlier under " + path;
    return nullptr;
  }
  loaded.bySha256.emplace(artifact.sha256, handle);
  return handle;
}

CpuKernelFn entryPoint(void* library, const std::string& key) {
  return reinterpret_cast<CpuKernelFn>(dlsym(library, symbolFor(key).c_str()));
}

std::string replaceAll(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

} // namespace

struct CpuCompiler::Unit {
  std::vector<size_t> kernels; // indices into build()'s argument
  size_t bytes = 0;
  std::string source; // the kernels under their content-keyed names
  std::string stem;   // hash of the source and the compiler: the library is <stem>.so
  CachedArtifact library;
  double buildMs = 0;
};

CpuCompiler::CpuCompiler(CpuCompilerOptions options)
    : options_(withDefaults(std::move(options))), isa_(configuredCpuIsa(options_.isa)),
      jobs_(jobsFor(options_.jobs)) {
  compilerKey_ = options_.compiler;
  for (const std::string& flag : compileCommandFlags())
    compilerKey_ += " " + flag;
  for (const std::string& flag : isa_.linkFlags)
    compilerKey_ += " " + flag;
  compilerKey_ += "\nisa " + isa_.name + "\n" + compilerVersion(options_.compiler);
}

std::vector<std::string> CpuCompiler::compileCommandFlags() const {
  std::vector<std::string> flags = options_.flags;
  flags.insert(flags.end(), isa_.compileFlags.begin(), isa_.compileFlags.end());
  return flags;
}

CpuCompiler::~CpuCompiler() = default;

KernelCache& CpuCompiler::cache() const {
  if (!cache_) cache_ = std::make_unique<KernelCache>(options_.cacheDir, options_.cacheMaxBytes);
  return *cache_;
}

std::string CpuCompiler::keyText(const GeneratedKernel& kernel) const {
  // '@' cannot occur in an identifier, so the abstracted name cannot collide with the source.
  return renameIdentifier(kernel.source, kernel.entry, "@") + "\n" + compilerKey_;
}

std::string CpuCompiler::kernelKey(const GeneratedKernel& kernel) const {
  return hashHex(keyText(kernel));
}

std::string CpuCompiler::libraryOf(const GeneratedKernel& kernel) const {
  std::string text = keyText(kernel);
  auto entry = cache().lookup(hashHex(text), sha256Hex(text));
  if (!entry) return "";
  std::string library = (fs::path(cache().dir()) / entry->artifact).string();
  struct stat st;
  return lstat(library.c_str(), &st) == 0 && S_ISREG(st.st_mode) ? library : "";
}

void CpuCompiler::compileAll(std::vector<Unit>& units) {
  struct Running {
    Unit* unit;
    std::string temporary; // the compiler's output, in the cache folder
    FileDescriptor output; // its diagnostics
    pid_t pid = 0;
    int spawnError = 0;
    int status = 0;
    std::chrono::steady_clock::time_point start;
    double ms = 0;
  };
  std::vector<Running> running;
  running.reserve(units.size());
  for (Unit& unit : units) {
    Running& run = running.emplace_back();
    run.unit = &unit;
    run.temporary = cache().temporaryPath(unit.stem + ".so");
    run.output = memoryFile("loupe:compiler-output", "", 0);
    FileDescriptor source = memoryFile("loupe:unit-source", unit.source, 0);
    std::vector<std::string> words{options_.compiler};
    for (const std::string& flag : compileCommandFlags())
      words.push_back(flag);
    words.insert(words.end(), {"-x", "c++", "-", "-o", run.temporary});
    words.insert(words.end(), isa_.linkFlags.begin(), isa_.linkFlags.end());
    std::vector<char*> argv;
    for (std::string& word : words)
      argv.push_back(word.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, source.get(), STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, run.output.get(), STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, run.output.get(), STDERR_FILENO);
    run.start = std::chrono::steady_clock::now();
    run.spawnError = posix_spawnp(&run.pid, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ++compilerRuns_;
  }

  // Each compiler is waited for on a thread of its own, so each unit's time is its own; all
  // are waited for before reporting, so none is left writing into the cache.
  {
    std::vector<std::thread> waiters;
    for (Running& run : running)
      waiters.emplace_back([&run] {
        if (run.spawnError == 0) waitpid(run.pid, &run.status, 0);
        run.ms = msSince(run.start);
      });
    for (std::thread& waiter : waiters)
      waiter.join();
  }

  std::string failure;
  for (Running& run : running) {
    Unit& unit = *run.unit;
    // The source is kept beside its library, and for inspection when the build failed.
    std::string sourceName = unit.stem + ".cpp";
    cache().write(sourceName, unit.source);
    std::string sourcePath = (fs::path(cache().dir()) / sourceName).string();
    if (run.spawnError != 0 || !WIFEXITED(run.status) || WEXITSTATUS(run.status) != 0) {
      unlink(run.temporary.c_str());
      if (failure.empty())
        failure = (run.spawnError ? "cannot run the C++ compiler '" + options_.compiler + "'"
                                  : std::string("the C++ compiler failed")) +
                  " on " + sourcePath + " (kept for inspection):\n" +
                  replaceAll(diagnosticsIn(run.output), "<stdin>", sourcePath);
      continue;
    }
    unit.library = cache().adopt(run.temporary, unit.stem + ".so");
    unit.buildMs = run.ms;
  }
  if (!failure.empty()) throw Error("codegen", failure);
}

std::vector<CpuKernelBuild> CpuCompiler::build(const std::vector<GeneratedKernel>& kernels) {
  std::vector<CpuKernelBuild> builds(kernels.size());
  if (kernels.empty()) return builds;
  std::lock_guard lock(libraryMutex());

  // Hits first, each distinct missing kernel once. A library holding several of the kernels
  // is read and verified once per call.
  std::vector<std::string> keys, keyDigests;
  std::map<std::string, CpuKernelBuild> byKey;
  std::map<std::string, std::pair<void*, double>> readLibraries; // by artifact sha256
  std::vector<size_t> missing;
  std::set<std::string> missingKeys;
  for (size_t i = 0; i < kernels.size(); ++i) {
    std::string text = keyText(kernels[i]);
    keys.push_back(hashHex(text));
    keyDigests.push_back(sha256Hex(text));
    const std::string& key = keys.back();
    if (byKey.count(key) || missingKeys.count(key)) continue;
    auto start = std::chrono::steady_clock::now();
    void* library = nullptr;
    double ms = 0;
    if (auto entry = cache().lookup(key, keyDigests.back())) {
      if (auto read = readLibraries.find(entry->artifactSha256); read != readLibraries.end()) {
        std::tie(library, ms) = read->second;
      } else if (auto artifact = cache().read(*entry)) {
        std::string why;
        library = loadLibrary(*artifact, why);
        ms = msSince(start);
        if (library) readLibraries[artifact->sha256] = {library, ms};
      }
    }
    if (CpuKernelFn fn = library ? entryPoint(library, key) : nullptr)
      byKey[key] = {fn, true, ms, isa_.name};
    else if (missingKeys.insert(key).second)
      missing.push_back(i);
  }

  if (!missing.empty()) {
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
    for (Unit& unit : units) {
      // Ordered by key, so the same kernels make the same unit whatever order they came in.
      std::sort(unit.kernels.begin(), unit.kernels.end(),
                [&](size_t a, size_t b) { return keys[a] < keys[b]; });
      for (size_t i : unit.kernels)
        unit.source +=
            renameIdentifier(kernels[i].source, kernels[i].entry, symbolFor(keys[i])) + "\n";
      unit.stem = hashHex(unit.source + "\n" + compilerKey_);
    }
    compileAll(units);
    for (Unit& unit : units) {
      auto start = std::chrono::steady_clock::now();
      std::string why;
      void* library = loadLibrary(unit.library, why);
      if (!library)
        throw Error("codegen",
                    "cannot load " + unit.library.name + " from " + cache().dir() + ": " + why);
      double ms = unit.buildMs + msSince(start);
      for (size_t i : unit.kernels) {
        CpuKernelFn fn = entryPoint(library, keys[i]);
        if (!fn)
          throw Error("codegen", "cannot load " + symbolFor(keys[i]) + " from " +
                                     unit.library.name + ": no such symbol");
        byKey[keys[i]] = {fn, false, ms, isa_.name};
        cache().record(keys[i], keyDigests[i], unit.library);
      }
    }
    cache().evict();
  }

  for (size_t i = 0; i < kernels.size(); ++i)
    builds[i] = byKey.at(keys[i]);
  return builds;
}

std::vector<CpuKernelFn> CpuCompiler::load(const std::vector<GeneratedKernel>& kernels) {
  std::vector<CpuKernelFn> functions;
  for (const CpuKernelBuild& built : build(kernels))
    functions.push_back(built.function);
  return functions;
}

} // namespace loupe
