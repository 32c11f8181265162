// The on-disk cache of built kernels: a folder of artifacts (the host compiler's shared
// objects and NVRTC's cubins) and of index files, `<key>.kernel`, each naming
// the artifact that holds one kernel. Whatever sits in that folder runs inside the user's
// process, so the cache takes nothing on trust (docs/cpu-codegen.md, "The kernel cache"):
//
// - The folder is the user's own and no one else can write it or a folder above it. One that
//   is not is refused, with one line on stderr, for a fresh private folder that lives as long
//   as the process.
// - An index records the SHA-256 of its artifact and of what its key names. An artifact is read
//   once, through a descriptor opened without following links and checked (a regular file of
//   this user that no one else can write), and hashed; the caller gets those bytes, never a path
//   to open again, so the bytes checked are the bytes it loads.
// - Files are written under a temporary name and renamed into place: processes sharing the
//   folder never see a partial file. No fsync: a file a power loss tears fails its digest and
//   is rebuilt.
// - The folder is bounded: after a build adds to it, the least recently used artifacts go, each
//   with its source and every index that names it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace loupe {

// Where the cache lives, by the environment: $LOUPE_CACHE_DIR/kernels, else
// $HOME/.cache/loupe/kernels, else (no HOME) $XDG_CACHE_HOME/loupe/kernels, else the per-user
// folder ${TMPDIR:-/tmp}/loupe-<uid>/kernels.
struct KernelCacheLocation {
  std::string dir;     // the folder of artifacts and index files
  int ownedLevels = 1; // the folders at the end of `dir` Loupe creates and that must be the user's
  bool privateRoot = false; // the first of those is in a shared folder: others may not even read it
};
KernelCacheLocation configuredKernelCacheLocation();
// The size limit: $LOUPE_CACHE_MAX_MB megabytes (a whole number from 1), else 300 MB.
int64_t configuredKernelCacheLimit();

// Why `location` may not hold code this process loads ("" when it may, or does not exist yet):
// a folder on its path that is not a real directory, or that someone other than this user
// (or, above Loupe's own folders, root) owns or can write.
std::string kernelCacheProblem(const KernelCacheLocation& location);

// What an index names: the artifact's file name and the SHA-256 of its bytes.
struct CacheIndexEntry {
  std::string artifact;
  std::string artifactSha256;
};

// An artifact as read from the cache and checked against its digest.
struct CachedArtifact {
  std::string name;   // its file name in the cache folder, e.g. "<32 hex digits>.so"
  std::string bytes;  // its content, read once
  std::string sha256; // of `bytes`
};

// What a cache folder holds. Only files Loupe names are counted and ever removed.
struct KernelCacheContents {
  int64_t bytes = 0;   // of every file counted below
  int artifacts = 0;   // libraries
  int indexes = 0;     // kernels
  int sources = 0;     // kept sources of libraries and of failed builds
  int temporaries = 0; // being written, or left by a process that died
  int others = 0;      // not Loupe's: not counted in `bytes`, never removed
};

class KernelCache {
public:
  // `dir`: the folder itself (created private when missing), or empty for the configured one.
  // `maxBytes`: 0 for configuredKernelCacheLimit(). A folder that is not private is refused
  // with one line on stderr (once per folder and process) for a private temporary folder,
  // removed when the process exits.
  explicit KernelCache(const std::string& dir = "", int64_t maxBytes = 0);

  // The folder in use (canonical): the configured one, or the temporary one that replaced it.
  const std::string& dir() const { return dir_; }
  int64_t maxBytes() const { return maxBytes_; }

  // The index of `key`, when it is well-formed and records `keySha256` (a key is a fast hash;
  // this makes a collision a miss).
  std::optional<CacheIndexEntry> lookup(const std::string& key, const std::string& keySha256) const;
  // The artifact `entry` names, when its bytes have the recorded digest; marks it used (the
  // order in which eviction removes artifacts).
  std::optional<CachedArtifact> read(const CacheIndexEntry& entry) const;

  // A fresh name in the folder for a file being written (by this process or a compiler).
  std::string temporaryPath(const std::string& name) const;
  // Takes the file a compiler wrote at `temporary` into the cache as artifact `name`: reads and
  // hashes it through one descriptor, then renames it into place.
  CachedArtifact adopt(const std::string& temporary, const std::string& name);
  // Writes `bytes` as `name`, atomically.
  void write(const std::string& name, std::string_view bytes);
  // Records that `artifact` holds the kernel `key`.
  void record(const std::string& key, const std::string& keySha256, const CachedArtifact& artifact);

  // Removes the least recently used artifacts, each with its source and every index naming it,
  // until the folder holds at most maxBytes(); and temporary files an hour old (left by a
  // process that died). Concurrent users lose nothing but a rebuild.
  void evict();

private:
  std::string dir_;
  int64_t maxBytes_;
};

// What the folder holds; reads nothing but its listing. An absent folder holds nothing.
KernelCacheContents kernelCacheContents(const std::string& dir);
// Removes every file of the folder Loupe names (but temporary files younger than an hour:
// a build may be writing them); returns what was removed. Other files are left as they are.
KernelCacheContents clearKernelCache(const std::string& dir);

} // namespace loupe
