// NVRTC, loaded at run time, and the cubin cache (nvrtc_compiler.h). The handful of NVRTC
// declarations are written out here instead of including nvrtc.h, so building Loupe needs
// nothing of CUDA.
#include "compiler/codegen/cuda/nvrtc_compiler.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include "compiler/codegen/sha256.h"
#include "compiler/ir/error.h"

namespace loupe {

namespace fs = std::filesystem;

namespace {

// nvrtc.h, as far as Loupe uses it: every function returns an nvrtcResult, 0 on success.
using NvrtcProgram = struct NvrtcProgramOpaque*;
using NvrtcResult = int;

struct Nvrtc {
  NvrtcResult (*createProgram)(NvrtcProgram*, const char* source, const char* name, int headers,
                               const char* const* headerSources,
                               const char* const* headerNames) = nullptr;
  NvrtcResult (*compileProgram)(NvrtcProgram, int options, const char* const* values) = nullptr;
  NvrtcResult (*getProgramLogSize)(NvrtcProgram, size_t*) = nullptr;
  NvrtcResult (*getProgramLog)(NvrtcProgram, char*) = nullptr;
  NvrtcResult (*getCUBINSize)(NvrtcProgram, size_t*) = nullptr;
  NvrtcResult (*getCUBIN)(NvrtcProgram, char*) = nullptr;
  NvrtcResult (*destroyProgram)(NvrtcProgram*) = nullptr;
  NvrtcResult (*version)(int* major, int* minor) = nullptr;
  const char* (*getErrorString)(NvrtcResult) = nullptr;
  std::string path;     // what was loaded
  std::string version_; // "13.0"
  std::string why;      // when nothing loaded: every path tried and why it failed
  bool loaded = false;
  bool splitCompile = false; // takes -split-compile (below)
};

constexpr const char* kSplitCompile = "-split-compile=0";
constexpr NvrtcResult kInvalidOption = 5; // NVRTC_ERROR_INVALID_OPTION

// Whether this NVRTC takes -split-compile: NVRTC 13 does; an older one is asked with an empty
// program, once per process.
bool takesSplitCompile(const Nvrtc& api, int major) {
  if (major >= 13) return true;
  NvrtcProgram program = nullptr;
  if (api.createProgram(&program, "", "probe.cu", 0, nullptr, nullptr) != 0) return false;
  const char* options[] = {kSplitCompile};
  NvrtcResult result = api.compileProgram(program, 1, options);
  api.destroyProgram(&program);
  return result != kInvalidOption;
}

// NVRTC opens libnvrtc-builtins.so.<version> by name: loaded from a folder, its builtins must
// be loaded from the same folder first, or every compile fails
// (NVRTC_ERROR_BUILTIN_OPERATION_FAILURE).
void preloadBuiltins(const fs::path& folder) {
  std::error_code error;
  for (const auto& file : fs::directory_iterator(folder, error)) {
    std::string name = file.path().filename().string();
    if (name.starts_with("libnvrtc-builtins.so."))
      dlopen(file.path().c_str(), RTLD_NOW | RTLD_GLOBAL);
  }
}

template <typename Fn>
bool bind(void* library, const char* name, Fn& fn) {
  fn = reinterpret_cast<Fn>(dlsym(library, name));
  return fn != nullptr;
}

Nvrtc loadNvrtc() {
  Nvrtc api;
  std::vector<std::string> tried;
  auto attempt = [&](const std::string& candidate, bool isPath) {
    if (api.loaded) return;
    if (isPath) {
      std::error_code error;
      if (!fs::exists(candidate, error)) {
        tried.push_back(candidate + " (no such file)");
        return;
      }
      preloadBuiltins(fs::path(candidate).parent_path());
    }
    void* library = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!library) {
      const char* error = dlerror();
      tried.push_back(candidate + " (" + (error ? error : "dlopen failed") + ")");
      return;
    }
    bool complete = bind(library, "nvrtcCreateProgram", api.createProgram) &&
                    bind(library, "nvrtcCompileProgram", api.compileProgram) &&
                    bind(library, "nvrtcGetProgramLogSize", api.getProgramLogSize) &&
                    bind(library, "nvrtcGetProgramLog", api.getProgramLog) &&
                    bind(library, "nvrtcGetCUBINSize", api.getCUBINSize) &&
                    bind(library, "nvrtcGetCUBIN", api.getCUBIN) &&
                    bind(library, "nvrtcDestroyProgram", api.destroyProgram) &&
                    bind(library, "nvrtcVersion", api.version) &&
                    bind(library, "nvrtcGetErrorString", api.getErrorString);
    if (!complete) {
      tried.push_back(candidate + " (lacks an NVRTC function)");
      return;
    }
    int major = 0, minor = 0;
    api.version(&major, &minor);
    api.version_ = std::to_string(major) + "." + std::to_string(minor);
    api.path = candidate;
    api.loaded = true;
    api.splitCompile = takesSplitCompile(api, major);
  };
  if (const char* path = std::getenv("LOUPE_NVRTC"); path && *path) attempt(path, true);
  attempt("libnvrtc.so.13", false);
  attempt("libnvrtc.so.12", false);
  std::vector<std::string> folders{"/usr/local/cuda/lib64"};
  if (const char* list = std::getenv("LOUPE_CUDA_LIBRARY_PATH")) {
    std::stringstream stream(list);
    for (std::string folder; std::getline(stream, folder, ':');)
      if (!folder.empty()) folders.push_back(folder);
  }
  for (const std::string& folder : folders)
    for (const char* name : {"libnvrtc.so.13", "libnvrtc.so.12"})
      attempt((fs::path(folder) / name).string(), true);
  if (!api.loaded) {
    api.why = "NVRTC was not found; tried:";
    for (const std::string& line : tried)
      api.why += "\n  " + line;
  }
  return api;
}

const Nvrtc& nvrtc() {
  static const Nvrtc api = loadNvrtc(); // thread-safe, once per process
  return api;
}

double msSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

std::string joined(const std::vector<std::string>& words, const char* separator) {
  std::string text;
  for (const std::string& word : words)
    text += (text.empty() ? "" : separator) + word;
  return text;
}

// One line per entry: name registers shared stack spill-stores spill-loads.
std::string resourcesText(const std::vector<CudaEntryResources>& entries) {
  std::string text;
  for (const CudaEntryResources& e : entries)
    text += e.name + " " + std::to_string(e.registers) + " " + std::to_string(e.sharedBytes) + " " +
            std::to_string(e.stackBytes) + " " + std::to_string(e.spillStoreBytes) + " " +
            std::to_string(e.spillLoadBytes) + "\n";
  return text;
}

std::optional<std::vector<CudaEntryResources>>
parseResourcesText(const std::string& text, const std::vector<std::string>& names) {
  std::vector<CudaEntryResources> entries;
  std::istringstream stream(text);
  CudaEntryResources e;
  while (stream >> e.name >> e.registers >> e.sharedBytes >> e.stackBytes >> e.spillStoreBytes >>
         e.spillLoadBytes)
    entries.push_back(e);
  if (entries.size() != names.size()) return std::nullopt;
  for (size_t i = 0; i < names.size(); ++i)
    if (entries[i].name != names[i]) return std::nullopt;
  return entries;
}

struct Compiled {
  std::string cubin;
  std::string log;
  std::string failure; // empty on success
  double ms = 0;
};

Compiled compile(const GeneratedCudaKernel& kernel, const std::vector<std::string>& options) {
  const Nvrtc& api = nvrtc();
  Compiled out;
  auto start = std::chrono::steady_clock::now();
  NvrtcProgram program = nullptr;
  std::string name = (kernel.entries.empty() ? "kernel" : kernel.entries.back()) + ".cu";
  if (NvrtcResult r =
          api.createProgram(&program, kernel.source.c_str(), name.c_str(), 0, nullptr, nullptr)) {
    out.failure = std::string("nvrtcCreateProgram: ") + api.getErrorString(r);
    return out;
  }
  std::vector<const char*> values;
  for (const std::string& option : options)
    values.push_back(option.c_str());
  NvrtcResult result = api.compileProgram(program, static_cast<int>(values.size()), values.data());
  size_t size = 0;
  if (api.getProgramLogSize(program, &size) == 0 && size > 1) {
    out.log.resize(size);
    api.getProgramLog(program, out.log.data());
    out.log.resize(size - 1); // the terminating NUL
  }
  if (result != 0) {
    out.failure = std::string("nvrtcCompileProgram: ") + api.getErrorString(result);
  } else if (api.getCUBINSize(program, &size) == 0) {
    out.cubin.resize(size);
    if (api.getCUBIN(program, out.cubin.data()) != 0) out.failure = "nvrtcGetCUBIN failed";
  } else {
    out.failure = "nvrtcGetCUBINSize failed";
  }
  api.destroyProgram(&program);
  out.ms = msSince(start);
  return out;
}

} // namespace

bool nvrtcAvailable(std::string* why) {
  const Nvrtc& api = nvrtc();
  if (why) *why = api.loaded ? "NVRTC " + api.version_ + " from " + api.path : api.why;
  return api.loaded;
}

void startNvrtc() {
  // Waited for by the static's destructor at exit, so NVRTC is never mid-compile then.
  static std::future<void> started = std::async(std::launch::async, [] {
    if (!nvrtcAvailable(nullptr)) return;
    GeneratedCudaKernel empty{"extern \"C\" __global__ void loupe_start() {}", {"loupe_start"}, ""};
    compile(empty, NvrtcCompiler().compileOptions());
  });
}

std::vector<CudaEntryResources> parsePtxasResources(const std::string& log,
                                                    const std::vector<std::string>& entries) {
  static const std::regex entryLine(
      R"(Function properties for (\S+)|Compiling entry function '([^']+)')");
  static const std::regex frameLine(
      R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex usedLine(R"(Used (\d+) registers)");
  static const std::regex smemLine(R"((\d+) bytes smem)");
  std::map<std::string, CudaEntryResources> byName;
  std::string current;
  std::istringstream stream(log);
  for (std::string line; std::getline(stream, line);) {
    std::smatch match;
    if (std::regex_search(line, match, entryLine)) {
      current = match[1].matched ? match[1].str() : match[2].str();
      continue;
    }
    if (current.empty()) continue;
    CudaEntryResources& e = byName[current];
    if (std::regex_search(line, match, frameLine)) {
      e.stackBytes = std::stoi(match[1]);
      e.spillStoreBytes = std::stoi(match[2]);
      e.spillLoadBytes = std::stoi(match[3]);
    }
    if (std::regex_search(line, match, usedLine)) e.registers = std::stoi(match[1]);
    if (std::regex_search(line, match, smemLine)) e.sharedBytes = std::stoi(match[1]);
  }
  std::vector<CudaEntryResources> out;
  for (const std::string& name : entries) {
    CudaEntryResources e = byName[name];
    e.name = name;
    out.push_back(e);
  }
  return out;
}

NvrtcCompiler::NvrtcCompiler(NvrtcOptions options) : options_(std::move(options)) {
  jobs_ = options_.jobs > 0 ? options_.jobs
                            : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

NvrtcCompiler::~NvrtcCompiler() = default;

KernelCache& NvrtcCompiler::cache() const {
  if (!cache_) cache_ = std::make_unique<KernelCache>(options_.cacheDir, options_.cacheMaxBytes);
  return *cache_;
}

std::vector<std::string> NvrtcCompiler::compileOptions() const {
  // IEEE division and square root, denormals kept: results close to torch's kernels, which are
  // built without fast math.
  std::vector<std::string> options{
      "-arch=" + options_.arch, "--std=c++17",     "-default-device", "-ftz=false",
      "-prec-div=true",         "-prec-sqrt=true", "-Xptxas=-v"};
  // A kernel's entries optimised on threads of their own: the same machine code, in about half
  // the wall time for a kernel of three entries (docs/cuda-codegen.md, "NVRTC").
  if (nvrtc().splitCompile) options.push_back(kSplitCompile);
  return options;
}

std::vector<CudaKernelBuild> NvrtcCompiler::build(const std::vector<GeneratedCudaKernel>& kernels) {
  std::vector<CudaKernelBuild> builds(kernels.size());
  if (kernels.empty()) return builds;
  std::string why;
  if (!nvrtcAvailable(&why)) throw Error("codegen", "cannot compile CUDA kernels: " + why);
  std::vector<std::string> options = compileOptions();
  std::string keySuffix =
      "\n" + options_.arch + "\nNVRTC " + nvrtc().version_ + "\n" + joined(options, " ");

  // Hits first; each distinct miss compiled once.
  std::vector<std::string> keys, keyDigests;
  std::map<std::string, size_t> firstWithKey;
  std::vector<size_t> missing;
  for (size_t i = 0; i < kernels.size(); ++i) {
    std::string text = kernels[i].source + keySuffix;
    keyDigests.push_back(sha256Hex(text));
    keys.push_back(keyDigests.back().substr(0, 32));
    if (!firstWithKey.emplace(keys[i], i).second) continue;
    auto start = std::chrono::steady_clock::now();
    auto entry = cache().lookup(keys[i], keyDigests[i]);
    auto artifact = entry ? cache().read(*entry) : std::nullopt;
    std::optional<std::vector<CudaEntryResources>> resources;
    if (artifact) {
      std::ifstream sidecar(fs::path(cache().dir()) / (artifact->name.substr(0, 32) + ".ptxas"));
      std::stringstream text;
      text << sidecar.rdbuf();
      resources = parseResourcesText(text.str(), kernels[i].entries);
    }
    if (artifact && resources)
      builds[i] = {std::move(artifact->bytes), true, msSince(start), std::move(*resources)};
    else
      missing.push_back(i);
  }

  // NVRTC programs compile concurrently (each thread its own program), up to `jobs` at once,
  // each thread taking the next program as it finishes one; the longest sources go first, so
  // the slowest compile does not start last.
  std::vector<size_t> order(missing.size());
  for (size_t m = 0; m < order.size(); ++m)
    order[m] = m;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return kernels[missing[a]].source.size() > kernels[missing[b]].source.size();
  });
  std::vector<Compiled> compiled(missing.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t at = next++; at < order.size(); at = next++) {
      try {
        compiled[order[at]] = compile(kernels[missing[order[at]]], options);
      } catch (const std::exception& error) { // out of memory: reported as that kernel's failure
        compiled[order[at]].failure = error.what();
      }
    }
  };
  {
    std::vector<std::thread> threads;
    for (size_t t = 1; t < std::min(order.size(), static_cast<size_t>(jobs_)); ++t)
      threads.emplace_back(work);
    work();
    for (std::thread& thread : threads)
      thread.join();
  }
  for (size_t m = 0; m < missing.size(); ++m) {
    size_t i = missing[m];
    const std::string& key = keys[i];
    cache().write(key + ".cu", kernels[i].source); // kept for inspection, built or not
    if (!compiled[m].failure.empty())
      throw Error("codegen", "NVRTC failed on CUDA kernel " + joined(kernels[i].entries, ", ") +
                                 " (source kept as " +
                                 (fs::path(cache().dir()) / (key + ".cu")).string() +
                                 "): " + compiled[m].failure + "\n" + compiled[m].log);
    CudaKernelBuild& built = builds[i];
    built.cubin = std::move(compiled[m].cubin);
    built.buildMs = compiled[m].ms;
    built.entries = parsePtxasResources(compiled[m].log, kernels[i].entries);
    cache().write(key + ".ptxas", resourcesText(built.entries));
    std::string name = key + ".cubin";
    cache().write(name, built.cubin);
    cache().record(key, keyDigests[i], CachedArtifact{name, built.cubin, sha256Hex(built.cubin)});
  }
  if (!missing.empty()) cache().evict();
  for (size_t i = 0; i < kernels.size(); ++i)
    if (size_t first = firstWithKey.at(keys[i]); first != i) builds[i] = builds[first];
  return builds;
}

} // namespace loupe
