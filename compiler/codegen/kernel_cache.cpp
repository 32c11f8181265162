// The kernel cache's folder rules and files: where it lives and when it is refused, the index
// format, reading an artifact through one checked descriptor, atomic writes, and LRU eviction.
#include "compiler/codegen/kernel_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include "compiler/codegen/file_descriptor.h"
#include "compiler/codegen/sha256.h"
#include "compiler/ir/error.h"

namespace loupe {

namespace fs = std::filesystem;

namespace {

constexpr int64_t kMegabyte = 1 << 20;
constexpr int64_t kDefaultLimitMb = 300;
constexpr int64_t kLargestArtifact = int64_t(1) << 30;
constexpr int64_t kLargestIndex = 4096;
// A temporary file this old was left by a process that died: no build takes an hour.
constexpr int64_t kStaleTemporarySeconds = 3600;

// The files the cache writes, each "<32 hex digits><extension>"; temporaries add a suffix.
constexpr const char* kIndexExtension = ".kernel";
// Shared objects (cpu/cpu_compiler.h) and cubins (cuda/nvrtc_compiler.h); a cubin's sources are
// its CUDA source and its ptxas resources.
constexpr std::array<const char*, 2> kArtifactExtensions = {".so", ".cubin"};
constexpr std::array<const char*, 3> kSourceExtensions = {".cpp", ".cu", ".ptxas"};
constexpr const char* kTemporaryMarker = ".tmp.";
constexpr const char* kIndexHeader = "loupe-kernel-index 1";

enum class FileKind { Artifact, Index, Source, Temporary, Other };

bool isHex(std::string_view text, size_t digits) {
  return text.size() == digits && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

bool isDigits(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The kind of a file named `name`: only names the cache writes are its own.
FileKind kindOf(std::string_view name) {
  if (size_t marker = name.find(kTemporaryMarker); marker != std::string_view::npos) {
    std::string_view suffix = name.substr(marker + std::strlen(kTemporaryMarker));
    size_t dot = suffix.find('.');
    bool numbered = dot != std::string_view::npos && isDigits(suffix.substr(0, dot)) &&
                    isDigits(suffix.substr(dot + 1));
    return numbered && kindOf(name.substr(0, marker)) != FileKind::Other ? FileKind::Temporary
                                                                         : FileKind::Other;
  }
  if (name.size() < 32 || !isHex(name.substr(0, 32), 32)) return FileKind::Other;
  std::string_view extension = name.substr(32);
  auto among = [&](const auto& extensions) {
    return std::any_of(extensions.begin(), extensions.end(),
                       [&](const char* e) { return extension == e; });
  };
  if (extension == kIndexExtension) return FileKind::Index;
  if (among(kArtifactExtensions)) return FileKind::Artifact;
  if (among(kSourceExtensions)) return FileKind::Source;
  return FileKind::Other;
}

std::string modeText(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

std::string uidText(uid_t uid) {
  return "uid " + std::to_string(uid);
}

// Why `path` cannot be one of Loupe's own folders: it must be a real directory of this user
// that no one else can write (`closed`: nor read or enter).
std::string ownFolderProblem(const std::string& path, const struct stat& st, bool closed) {
  if (S_ISLNK(st.st_mode)) return path + " is a symbolic link";
  if (!S_ISDIR(st.st_mode)) return path + " is not a directory";
  if (st.st_uid != geteuid())
    return path + " is owned by " + uidText(st.st_uid) + ", not by this user (" +
           uidText(geteuid()) + ")";
  if (closed && (st.st_mode & 077))
    return path + " is open to group or others (mode " + modeText(st.st_mode) + ")";
  if (st.st_mode & 022)
    return path + " is writable by group or others (mode " + modeText(st.st_mode) + ")";
  return "";
}

// Why the folder `path` above Loupe's own makes them unsafe: whoever can rename entries in it
// can swap the cache for their own. This user or root must own it, and if others may write it,
// the sticky bit must keep them from renaming what is not theirs (as in /tmp).
std::string ancestorProblem(const std::string& path, const struct stat& st) {
  if (!S_ISDIR(st.st_mode)) return "the folder " + path + " above it is not a directory";
  if (st.st_uid != geteuid() && st.st_uid != 0)
    return "the folder " + path + " above it is owned by " + uidText(st.st_uid);
  if ((st.st_mode & 022) && !(st.st_mode & S_ISVTX))
    return "the folder " + path + " above it is writable by group or others (mode " +
           modeText(st.st_mode) + ")";
  return "";
}

// Checks the canonical folder `dir` as one of Loupe's own, and every folder above it.
std::string chainProblem(const std::string& dir, bool closed) {
  std::vector<std::string> folders{"/"};
  for (const fs::path& part : fs::path(dir).relative_path())
    folders.push_back((fs::path(folders.back()) / part).string());
  for (size_t i = 0; i < folders.size(); ++i) {
    struct stat st;
    if (lstat(folders[i].c_str(), &st) != 0)
      return "cannot inspect " + folders[i] + ": " + std::strerror(errno);
    std::string problem = i + 1 == folders.size() ? ownFolderProblem(folders[i], st, closed)
                                                  : ancestorProblem(folders[i], st);
    if (!problem.empty()) return problem;
  }
  return "";
}

std::string canonical(const std::string& path) {
  char resolved[PATH_MAX];
  return realpath(path.c_str(), resolved) ? std::string(resolved) : std::string();
}

// Loupe's own folders of `location`, outermost first.
std::vector<std::string> ownedFolders(const KernelCacheLocation& location) {
  fs::path folder = fs::absolute(location.dir).lexically_normal();
  if (!folder.has_filename()) folder = folder.parent_path(); // a trailing '/'
  std::vector<std::string> owned;
  for (int level = 0; level < location.ownedLevels; ++level, folder = folder.parent_path())
    owned.insert(owned.begin(), folder.string());
  return owned;
}

// Each of Loupe's own folders that exists is checked where it really is (a link the user made
// is followed, and its target checked), with every folder above it.
std::string locationProblem(const KernelCacheLocation& location) {
  std::vector<std::string> owned = ownedFolders(location);
  for (size_t i = 0; i < owned.size(); ++i) {
    std::string dir = canonical(owned[i]);
    if (dir.empty() && errno == ENOENT) continue;
    std::string problem = dir.empty() ? "cannot resolve " + owned[i] + ": " + std::strerror(errno)
                                      : chainProblem(dir, location.privateRoot && i == 0);
    if (!problem.empty()) return problem;
  }
  return "";
}

// Creates the missing folders of `location` (private), then checks it. Returns the canonical
// folder, or a problem.
std::pair<std::string, std::string> openFolder(const KernelCacheLocation& location) {
  fs::path partial;
  for (const fs::path& part : fs::absolute(location.dir)) {
    partial /= part;
    if (mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST)
      return {"", "cannot create " + partial.string() + ": " + std::strerror(errno)};
  }
  std::string dir = canonical(location.dir);
  if (dir.empty()) return {"", "cannot resolve " + location.dir + ": " + std::strerror(errno)};
  return {dir, locationProblem(location)};
}

// The process's private folder when the configured one is refused: made by mkdtemp, so fresh
// and 0700, and removed at exit by the process that made it (not by a forked child).
std::string* temporaryFolder = nullptr;
pid_t temporaryFolderOwner = 0;

void removeTemporaryFolder() {
  std::error_code ignored;
  if (temporaryFolder && getpid() == temporaryFolderOwner)
    fs::remove_all(*temporaryFolder, ignored);
}

const std::string& temporaryCacheFolder() {
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  struct stat st;
  // Made again if something (a cleaner of the temporary directory) removed it meanwhile.
  if (temporaryFolder && lstat(temporaryFolder->c_str(), &st) == 0 &&
      ownFolderProblem(*temporaryFolder, st, true).empty())
    return *temporaryFolder;
  std::string problems;
  for (const char* base : {static_cast<const char*>(std::getenv("TMPDIR")), "/tmp"}) {
    if (!base || !*base) continue;
    std::string pattern = std::string(base) + "/loupe-kernels-XXXXXX";
    std::string problem;
    if (!mkdtemp(pattern.data())) {
      problem = "cannot create a folder in " + std::string(base) + ": " + std::strerror(errno);
    } else {
      std::string dir = canonical(pattern);
      problem = dir.empty() ? "cannot resolve " + pattern : chainProblem(dir, true);
      if (problem.empty()) {
        if (!temporaryFolder) {
          temporaryFolder = new std::string;
          std::atexit(removeTemporaryFolder);
        }
        *temporaryFolder = dir;
        temporaryFolderOwner = getpid();
        return *temporaryFolder;
      }
      rmdir(pattern.c_str());
    }
    problems += (problems.empty() ? "" : "; ") + problem;
  }
  throw Error("codegen", "no private folder for the kernel cache: " + problems);
}

// One line per refused folder and process: a training job builds kernels many times.
void warnRefused(const std::string& dir, const std::string& problem,
                 const std::string& replacement) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  std::lock_guard lock(mutex);
  if (!warned.insert(dir).second) return;
  std::fprintf(stderr,
               "loupe: warning: not using the kernel cache %s: %s; kernels are cached in %s "
               "until this process exits (fix the folder, or set LOUPE_CACHE_DIR to a private "
               "one)\n",
               dir.c_str(), problem.c_str(), replacement.c_str());
}

std::string uniqueSuffix() {
  static std::atomic<int> counter{0};
  return kTemporaryMarker + std::to_string(getpid()) + "." + std::to_string(counter++);
}

bool isPrivateFile(const struct stat& st) {
  return S_ISREG(st.st_mode) && st.st_uid == geteuid() && !(st.st_mode & 022);
}

// Reads `path` through one descriptor that followed no link (O_NOFOLLOW), when it is a
// regular file of this user that no one else can write; nullopt otherwise.
std::optional<std::string> readPrivateFile(const std::string& path, int64_t limit) {
  FileDescriptor file(open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  struct stat st;
  if (!file.valid() || fstat(file.get(), &st) != 0 || !isPrivateFile(st)) return std::nullopt;
  return readAll(file.get(), limit);
}

std::optional<CacheIndexEntry> parseIndex(const std::string& text, std::string* keySha256) {
  // Four lines: the header, then "artifact NAME", "artifact-sha256 HEX", "source-sha256 HEX".
  std::vector<std::string> lines;
  size_t from = 0;
  for (size_t end; (end = text.find('\n', from)) != std::string::npos; from = end + 1)
    lines.push_back(text.substr(from, end - from));
  auto field = [&](size_t line, std::string_view name) -> std::optional<std::string> {
    std::string prefix = std::string(name) + " ";
    if (lines[line].rfind(prefix, 0) != 0) return std::nullopt;
    return lines[line].substr(prefix.size());
  };
  if (from != text.size() || lines.size() != 4 || lines[0] != kIndexHeader) return std::nullopt;
  auto artifact = field(1, "artifact"), artifactSha = field(2, "artifact-sha256"),
       sourceSha = field(3, "source-sha256");
  if (!artifact || kindOf(*artifact) != FileKind::Artifact || !artifactSha ||
      !isHex(*artifactSha, 64) || !sourceSha || !isHex(*sourceSha, 64))
    return std::nullopt;
  if (keySha256) *keySha256 = *sourceSha;
  return CacheIndexEntry{*artifact, *artifactSha};
}

struct CacheFile {
  std::string name;
  FileKind kind;
  int64_t bytes;
  int64_t modifiedNs;
};

// The folder's entries that are regular files or links (a link is never followed: it is
// classified by its name, like a file, so clearing removes a planted one).
std::vector<CacheFile> listFolder(const std::string& dir) {
  std::vector<CacheFile> files;
  DIR* folder = opendir(dir.c_str());
  if (!folder) return files;
  while (const dirent* entry = readdir(folder)) {
    std::string name = entry->d_name;
    struct stat st;
    if (name == "." || name == ".." ||
        fstatat(dirfd(folder), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
      continue;
    FileKind kind = S_ISREG(st.st_mode) || S_ISLNK(st.st_mode) ? kindOf(name) : FileKind::Other;
    files.push_back({name, kind, static_cast<int64_t>(st.st_size),
                     static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec});
  }
  closedir(folder);
  return files;
}

int64_t nowNs() {
  timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
}

bool isStaleTemporary(const CacheFile& file, int64_t now) {
  return file.kind == FileKind::Temporary &&
         now - file.modifiedNs > kStaleTemporarySeconds * 1000000000;
}

void count(KernelCacheContents& contents, const CacheFile& file) {
  switch (file.kind) {
  case FileKind::Artifact:
    ++contents.artifacts;
    break;
  case FileKind::Index:
    ++contents.indexes;
    break;
  case FileKind::Source:
    ++contents.sources;
    break;
  case FileKind::Temporary:
    ++contents.temporaries;
    break;
  case FileKind::Other:
    ++contents.others;
    return;
  }
  contents.bytes += file.bytes;
}

void removeFile(const std::string& dir, const std::string& name) {
  unlink((fs::path(dir) / name).c_str()); // already gone: another process evicted it
}

} // namespace

KernelCacheLocation configuredKernelCacheLocation() {
  auto variable = [](const char* name) -> std::string {
    const char* value = std::getenv(name);
    return value && *value ? value : "";
  };
  if (std::string dir = variable("LOUPE_CACHE_DIR"); !dir.empty())
    return {(fs::absolute(dir) / "kernels").string(), 2, false};
  if (std::string home = variable("HOME"); !home.empty())
    return {(fs::path(home) / ".cache" / "loupe" / "kernels").string(), 2, false};
  if (std::string cache = variable("XDG_CACHE_HOME"); !cache.empty())
    return {(fs::path(cache) / "loupe" / "kernels").string(), 2, false};
  // The shared temporary folder: a per-user folder there that no one else may even enter, so
  // another user cannot create it first and fill it.
  std::string temporary = variable("TMPDIR");
  return {(fs::path(temporary.empty() ? "/tmp" : temporary) /
           ("loupe-" + std::to_string(geteuid())) / "kernels")
              .string(),
          2, true};
}

int64_t configuredKernelCacheLimit() {
  const char* text = std::getenv("LOUPE_CACHE_MAX_MB");
  if (!text || !*text) return kDefaultLimitMb * kMegabyte;
  char* end = nullptr;
  long long megabytes = std::strtoll(text, &end, 10);
  if (*end || megabytes < 1 || megabytes > (int64_t(1) << 40))
    throw Error("codegen", "LOUPE_CACHE_MAX_MB must be a whole number of megabytes from 1, got '" +
                               std::string(text) + "'");
  return megabytes * kMegabyte;
}

std::string kernelCacheProblem(const KernelCacheLocation& location) {
  return locationProblem(location);
}

KernelCache::KernelCache(const std::string& dir, int64_t maxBytes)
    : maxBytes_(maxBytes > 0 ? maxBytes : configuredKernelCacheLimit()) {
  KernelCacheLocation location =
      dir.empty() ? configuredKernelCacheLocation() : KernelCacheLocation{dir, 1, false};
  auto [folder, problem] = openFolder(location);
  if (problem.empty()) {
    dir_ = folder;
    return;
  }
  dir_ = temporaryCacheFolder();
  warnRefused(location.dir, problem, dir_);
}

std::optional<CacheIndexEntry> KernelCache::lookup(const std::string& key,
                                                   const std::string& keySha256) const {
  auto text = readPrivateFile((fs::path(dir_) / (key + kIndexExtension)).string(), kLargestIndex);
  std::string recorded;
  auto entry = text ? parseIndex(*text, &recorded) : std::nullopt;
  if (!entry || recorded != keySha256) return std::nullopt;
  return entry;
}

std::optional<CachedArtifact> KernelCache::read(const CacheIndexEntry& entry) const {
  std::string path = (fs::path(dir_) / entry.artifact).string();
  auto bytes = readPrivateFile(path, kLargestArtifact);
  if (!bytes) return std::nullopt;
  CachedArtifact artifact{entry.artifact, std::move(*bytes), ""};
  artifact.sha256 = sha256Hex(artifact.bytes);
  if (artifact.sha256 != entry.artifactSha256) return std::nullopt;
  // Eviction's clock: atime is often not kept, so the cache keeps its own in the mtime.
  utimensat(AT_FDCWD, path.c_str(), nullptr, AT_SYMLINK_NOFOLLOW);
  return artifact;
}

std::string KernelCache::temporaryPath(const std::string& name) const {
  return (fs::path(dir_) / (name + uniqueSuffix())).string();
}

CachedArtifact KernelCache::adopt(const std::string& temporary, const std::string& name) {
  FileDescriptor file(open(temporary.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  struct stat st;
  if (!file.valid() || fstat(file.get(), &st) != 0)
    throw Error("codegen",
                "cannot open the compiler's output " + temporary + ": " + std::strerror(errno));
  // The compiler's file mode follows the umask; the cache's files are the user's alone.
  if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || fchmod(file.get(), 0600) != 0)
    throw Error("codegen",
                "the compiler's output " + temporary + " is not a regular file of this user");
  auto bytes = readAll(file.get(), kLargestArtifact);
  if (!bytes) throw Error("codegen", "cannot read the compiler's output " + temporary);
  CachedArtifact artifact{name, std::move(*bytes), ""};
  artifact.sha256 = sha256Hex(artifact.bytes);
  if (rename(temporary.c_str(), (fs::path(dir_) / name).c_str()) != 0)
    throw Error("codegen", "cannot move " + temporary + " into place: " + std::strerror(errno));
  return artifact;
}

void KernelCache::write(const std::string& name, std::string_view bytes) {
  std::string temporary = temporaryPath(name);
  FileDescriptor file(
      open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!file.valid() || !writeAll(file.get(), bytes) ||
      rename(temporary.c_str(), (fs::path(dir_) / name).c_str()) != 0) {
    std::string why = std::strerror(errno);
    unlink(temporary.c_str());
    throw Error("codegen", "cannot write " + (fs::path(dir_) / name).string() + ": " + why);
  }
}

void KernelCache::record(const std::string& key, const std::string& keySha256,
                         const CachedArtifact& artifact) {
  write(key + kIndexExtension, std::string(kIndexHeader) + "\nartifact " + artifact.name +
                                   "\nartifact-sha256 " + artifact.sha256 + "\nsource-sha256 " +
                                   keySha256 + "\n");
}

void KernelCache::evict() {
  const int64_t now = nowNs();
  std::vector<CacheFile> files = listFolder(dir_);
  int64_t total = 0;
  for (const CacheFile& file : files) {
    if (isStaleTemporary(file, now))
      removeFile(dir_, file.name);
    else if (file.kind != FileKind::Other && file.kind != FileKind::Temporary)
      total += file.bytes; // a temporary being written is not the cache's yet
  }
  if (total <= maxBytes_) return;

  // Each artifact with its source and the indexes naming it is one entry; a source or an
  // index without its artifact is one by itself. Last used: the newest of its files.
  struct Entry {
    std::vector<std::string> files; // indexes first: a reader then sees a miss, not a hole
    int64_t bytes = 0;
    int64_t lastUsedNs = 0;
  };
  std::map<std::string, Entry> entries;
  auto add = [&](const std::string& owner, const CacheFile& file) {
    Entry& entry = entries[owner];
    entry.files.insert(file.kind == FileKind::Index ? entry.files.begin() : entry.files.end(),
                       file.name);
    entry.bytes += file.bytes;
    entry.lastUsedNs = std::max(entry.lastUsedNs, file.modifiedNs);
  };
  std::set<std::string> artifacts;
  for (const CacheFile& file : files)
    if (file.kind == FileKind::Artifact) artifacts.insert(file.name);
  auto artifactOfStem = [&](const std::string& stem) -> std::string {
    for (const char* extension : kArtifactExtensions)
      if (artifacts.count(stem + extension)) return stem + extension;
    return "";
  };
  for (const CacheFile& file : files) {
    std::string owner = file.name; // an artifact owns itself
    if (file.kind == FileKind::Source) {
      if (std::string artifact = artifactOfStem(file.name.substr(0, 32)); !artifact.empty())
        owner = artifact;
    } else if (file.kind == FileKind::Index) {
      auto text = readPrivateFile((fs::path(dir_) / file.name).string(), kLargestIndex);
      auto named = text ? parseIndex(*text, nullptr) : std::nullopt;
      if (named && artifacts.count(named->artifact)) owner = named->artifact;
    } else if (file.kind != FileKind::Artifact) {
      continue;
    }
    add(owner, file);
  }
  std::vector<const Entry*> oldestFirst;
  for (const auto& [owner, entry] : entries)
    oldestFirst.push_back(&entry);
  std::stable_sort(oldestFirst.begin(), oldestFirst.end(),
                   [](const Entry* a, const Entry* b) { return a->lastUsedNs < b->lastUsedNs; });
  for (const Entry* entry : oldestFirst) {
    if (total <= maxBytes_) break;
    for (const std::string& name : entry->files)
      removeFile(dir_, name);
    total -= entry->bytes;
  }
}

KernelCacheContents kernelCacheContents(const std::string& dir) {
  KernelCacheContents contents;
  for (const CacheFile& file : listFolder(dir))
    count(contents, file);
  return contents;
}

KernelCacheContents clearKernelCache(const std::string& dir) {
  KernelCacheContents removed;
  const int64_t now = nowNs();
  for (const CacheFile& file : listFolder(dir)) {
    if (file.kind == FileKind::Other ||
        (file.kind == FileKind::Temporary && !isStaleTemporary(file, now)))
      continue;
    removeFile(dir, file.name);
    count(removed, file);
  }
  return removed;
}

} // namespace loupe
