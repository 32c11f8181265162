// The kernel cache's folder rules, index, eviction and clearing, on artifacts of made-up bytes
// (cpu_compiler_test.cpp builds real libraries through it).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "compiler/codegen/kernel_cache.h"
#include "compiler/codegen/sha256.h"
#include "compiler/ir/error.h"
#include "unit_tests/compiler/codegen/codegen_test_support.h"

namespace loupe::testing {
namespace {

namespace fs = std::filesystem;

constexpr uid_t kNobody = 65534;

bool isRoot() {
  return geteuid() == 0;
}

mode_t modeOf(const std::string& path) {
  struct stat st;
  EXPECT_EQ(lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

void makeFolder(const std::string& path, mode_t mode) {
  fs::create_directories(path);
  ASSERT_EQ(chmod(path.c_str(), mode), 0) << path;
}

void setModifiedSecondsAgo(const std::string& path, int seconds) {
  timespec times[2];
  clock_gettime(CLOCK_REALTIME, &times[0]);
  times[0].tv_sec -= seconds;
  times[1] = times[0];
  ASSERT_EQ(utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW), 0) << path;
}

// The environment that picks the cache location, cleared, so each test sets what it needs.
struct CacheEnvironment : ScopedEnvironment {
  CacheEnvironment() {
    for (const char* name : {"LOUPE_CACHE_DIR", "HOME", "XDG_CACHE_HOME", "TMPDIR"})
      set(name, std::nullopt);
  }
};

// An artifact of `size` made-up bytes under the stem `stem` (32 hex digits), with its source
// and an index per key in `keys`, as a build leaves them.
void addEntry(KernelCache& cache, char stem, size_t size, const std::vector<char>& keys) {
  std::string name = std::string(32, stem);
  CachedArtifact artifact{name + ".so", std::string(size, stem), ""};
  artifact.sha256 = sha256Hex(artifact.bytes);
  cache.write(artifact.name, artifact.bytes);
  cache.write(name + ".cpp", std::string(100, 's'));
  for (char key : keys)
    cache.record(std::string(32, key), sha256Hex(std::string(1, key)), artifact);
}

bool inCache(const KernelCache& cache, const std::string& name) {
  return fs::exists(fs::symlink_status(cache.dir() + "/" + name));
}

TEST(KernelCache, TheLocationFollowsTheEnvironment) {
  CacheEnvironment environment;
  environment.set("TMPDIR", "/scratch");
  KernelCacheLocation perUser = configuredKernelCacheLocation();
  EXPECT_EQ(perUser.dir, "/scratch/loupe-" + std::to_string(geteuid()) + "/kernels");
  EXPECT_EQ(perUser.ownedLevels, 2);
  EXPECT_TRUE(perUser.privateRoot);

  environment.set("XDG_CACHE_HOME", "/xdg");
  EXPECT_EQ(configuredKernelCacheLocation().dir, "/xdg/loupe/kernels");
  environment.set("HOME", "/home/ada");
  EXPECT_EQ(configuredKernelCacheLocation().dir, "/home/ada/.cache/loupe/kernels");
  environment.set("LOUPE_CACHE_DIR", "/data/loupe");
  KernelCacheLocation given = configuredKernelCacheLocation();
  EXPECT_EQ(given.dir, "/data/loupe/kernels");
  EXPECT_EQ(given.ownedLevels, 2);
  EXPECT_FALSE(given.privateRoot);
}

TEST(KernelCache, WithoutHomeTheFolderIsPerUserAndPrivate) {
  ScratchFolder scratch;
  CacheEnvironment environment;
  environment.set("TMPDIR", scratch.path);
  KernelCache cache;
  std::string root = scratch / ("loupe-" + std::to_string(geteuid()));
  EXPECT_EQ(cache.dir(), root + "/kernels");
  EXPECT_EQ(modeOf(root), 0700u);
  EXPECT_EQ(modeOf(root + "/kernels"), 0700u);
}

TEST(KernelCache, APerUserFolderOthersCanEnterIsRefused) {
  ScratchFolder scratch;
  CacheEnvironment environment;
  environment.set("TMPDIR", scratch.path);
  std::string root = scratch / ("loupe-" + std::to_string(geteuid()));
  makeFolder(root, 0755);
  EXPECT_EQ(kernelCacheProblem(configuredKernelCacheLocation()),
            root + " is open to group or others (mode 0755)");
}

TEST(KernelCache, APerUserFolderAnotherUserCreatedFirstIsRefused) {
  if (!isRoot()) GTEST_SKIP() << "needs root to give a folder to another user";
  ScratchFolder scratch;
  CacheEnvironment environment;
  environment.set("TMPDIR", scratch.path);
  std::string root = scratch / ("loupe-" + std::to_string(geteuid()));
  makeFolder(root + "/kernels", 0700);
  ASSERT_EQ(chown(root.c_str(), kNobody, kNobody), 0);
  EXPECT_EQ(kernelCacheProblem(configuredKernelCacheLocation()),
            root + " is owned by uid 65534, not by this user (uid 0)");
}

TEST(KernelCache, LoupeCacheDirAndItsKernelsFolderAreBothChecked) {
  ScratchFolder scratch;
  CacheEnvironment environment;
  environment.set("LOUPE_CACHE_DIR", scratch / "cache");
  KernelCacheLocation location = configuredKernelCacheLocation();
  EXPECT_EQ(kernelCacheProblem(location), ""); // absent: nothing to refuse yet
  makeFolder(scratch / "cache/kernels", 0700);
  EXPECT_EQ(kernelCacheProblem(location), "");
  ASSERT_EQ(chmod((scratch / "cache").c_str(), 0777), 0);
  EXPECT_EQ(kernelCacheProblem(location),
            scratch / "cache" + " is writable by group or others (mode 0777)");
  ASSERT_EQ(chmod((scratch / "cache").c_str(), 0700), 0);
  ASSERT_EQ(chmod((scratch / "cache/kernels").c_str(), 0770), 0);
  EXPECT_EQ(kernelCacheProblem(location),
            scratch / "cache/kernels" + " is writable by group or others (mode 0770)");
  fs::remove(scratch / "cache/kernels");
  fs::create_directory_symlink(scratch.path, scratch / "cache/kernels");
  EXPECT_EQ(kernelCacheProblem(location), ""); // a link the user made: its target is checked
}

TEST(KernelCache, AFolderAboveThatOthersCanRenameInIsRefused) {
  ScratchFolder scratch;
  makeFolder(scratch / "shared", 0777);
  KernelCacheLocation location{scratch / "shared/cache", 1, false};
  makeFolder(location.dir, 0700);
  EXPECT_EQ(kernelCacheProblem(location), "the folder " + scratch / "shared" +
                                              " above it is writable by group or others "
                                              "(mode 0777)");
  ASSERT_EQ(chmod((scratch / "shared").c_str(), 01777), 0); // sticky, as /tmp
  EXPECT_EQ(kernelCacheProblem(location), "");
}

TEST(KernelCache, ARefusedFolderIsReplacedByAPrivateTemporaryOne) {
  ScratchFolder scratch;
  makeFolder(scratch / "open", 0777);
  ::testing::internal::CaptureStderr();
  KernelCache cache(scratch / "open");
  KernelCache again(scratch / "open");
  std::string warning = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(warning, "loupe: warning: not using the kernel cache " + scratch / "open" + ": " +
                         scratch / "open" + " is writable by group or others (mode 0777); " +
                         "kernels are cached in " + cache.dir() +
                         " until this process exits (fix the folder, or set LOUPE_CACHE_DIR to "
                         "a private one)\n");
  EXPECT_EQ(again.dir(), cache.dir());
  EXPECT_EQ(modeOf(cache.dir()), 0700u);
  addEntry(cache, 'a', 10, {'k'});
  EXPECT_TRUE(fs::is_empty(scratch / "open"));
}

TEST(KernelCache, TheLimitComesFromLoupeCacheMaxMb) {
  CacheEnvironment environment;
  EXPECT_EQ(configuredKernelCacheLimit(), 300 << 20);
  environment.set("LOUPE_CACHE_MAX_MB", "12");
  EXPECT_EQ(configuredKernelCacheLimit(), 12 << 20);
  for (const char* bad : {"0", "-3", "1.5", "lots"}) {
    environment.set("LOUPE_CACHE_MAX_MB", bad);
    try {
      configuredKernelCacheLimit();
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& error) {
      EXPECT_NE(error.message().find(std::string("got '") + bad + "'"), std::string::npos)
          << error.message();
    }
  }
}

TEST(KernelCache, AnIndexRecordsBothDigestsAndAnyMismatchIsAMiss) {
  ScratchFolder scratch;
  KernelCache cache(scratch / "kernels", 1 << 20);
  addEntry(cache, 'a', 1000, {'k'});
  const std::string key(32, 'k');
  auto entry = cache.lookup(key, sha256Hex("k"));
  ASSERT_TRUE(entry);
  EXPECT_EQ(entry->artifact, std::string(32, 'a') + ".so");
  EXPECT_EQ(entry->artifactSha256, sha256Hex(std::string(1000, 'a')));
  auto artifact = cache.read(*entry);
  ASSERT_TRUE(artifact);
  EXPECT_EQ(artifact->bytes, std::string(1000, 'a'));

  EXPECT_FALSE(cache.lookup(key, sha256Hex("another kernel with the same fast hash")));
  std::ofstream(cache.dir() + "/" + entry->artifact, std::ios::in | std::ios::out) << "b";
  EXPECT_FALSE(cache.read(*entry)) << "a byte changed in place";
  std::ofstream(cache.dir() + "/" + key + ".kernel") << "loupe-kernel-index 1\nartifact x.so\n";
  EXPECT_FALSE(cache.lookup(key, sha256Hex("k"))) << "a malformed index";
}

TEST(KernelCache, FilesOthersCouldWriteAreNotRead) {
  ScratchFolder scratch;
  KernelCache cache(scratch / "kernels", 1 << 20);
  addEntry(cache, 'a', 1000, {'k'});
  auto entry = cache.lookup(std::string(32, 'k'), sha256Hex("k"));
  ASSERT_TRUE(entry);
  std::string artifact = cache.dir() + "/" + entry->artifact;
  ASSERT_EQ(chmod(artifact.c_str(), 0666), 0);
  EXPECT_FALSE(cache.read(*entry));
  ASSERT_EQ(chmod(artifact.c_str(), 0600), 0);
  EXPECT_TRUE(cache.read(*entry));
  if (!isRoot()) return;
  ASSERT_EQ(chown(artifact.c_str(), kNobody, kNobody), 0);
  EXPECT_FALSE(cache.read(*entry)) << "another user's file";
}

TEST(KernelCache, EvictionRemovesTheLeastRecentlyUsedEntriesWhole) {
  ScratchFolder scratch;
  // Each entry: 1000 bytes of artifact, 100 of source, an index of about 230 per key; the
  // three are over the limit, and the two used longest ago must go.
  KernelCache cache(scratch / "kernels", 2000);
  addEntry(cache, 'a', 1000, {'1', '2'});
  addEntry(cache, 'b', 1000, {'3'});
  addEntry(cache, 'c', 1000, {'4'});
  const std::string a(32, 'a'), b(32, 'b'), c(32, 'c');
  setModifiedSecondsAgo(cache.dir() + "/" + b + ".so", 300); // b was used longest ago
  for (const std::string& file : {a + ".so", c + ".so"})
    setModifiedSecondsAgo(cache.dir() + "/" + file, 200);
  for (const auto& file : fs::directory_iterator(cache.dir()))
    if (file.path().extension() != ".so") setModifiedSecondsAgo(file.path().string(), 400);
  ASSERT_TRUE(cache.read(*cache.lookup(std::string(32, '1'), sha256Hex("1")))); // a: used now
  std::string stale = cache.dir() + "/" + c + ".so.tmp.1.0", fresh = stale + "1";
  std::ofstream(stale) << "left by a process that died";
  std::ofstream(fresh) << "being written";
  setModifiedSecondsAgo(stale, 7200);
  std::ofstream(cache.dir() + "/notes.txt") << std::string(5000, 'n');

  EXPECT_GT(kernelCacheContents(cache.dir()).bytes, 4000);
  cache.evict();
  KernelCacheContents left = kernelCacheContents(cache.dir());
  EXPECT_LE(left.bytes - static_cast<int64_t>(fs::file_size(fresh)), 2000);
  EXPECT_FALSE(inCache(cache, b + ".so"));
  EXPECT_FALSE(inCache(cache, b + ".cpp"));
  EXPECT_FALSE(inCache(cache, std::string(32, '3') + ".kernel"));
  EXPECT_FALSE(inCache(cache, c + ".so")) << "a and c alone are still over the limit";
  EXPECT_FALSE(inCache(cache, std::string(32, '4') + ".kernel"));
  for (const std::string& file :
       std::vector<std::string>{a + ".so", a + ".cpp", std::string(32, '1') + ".kernel",
                                std::string(32, '2') + ".kernel", "notes.txt"})
    EXPECT_TRUE(inCache(cache, file)) << file;
  EXPECT_FALSE(inCache(cache, c + ".so.tmp.1.0"));
  EXPECT_TRUE(inCache(cache, c + ".so.tmp.1.01"));
  EXPECT_EQ(left.artifacts, 1);
  EXPECT_EQ(left.indexes, 2);
  EXPECT_EQ(left.others, 1);
}

TEST(KernelCache, ClearingRemovesOnlyTheCachesOwnFiles) {
  ScratchFolder scratch;
  KernelCache cache(scratch / "kernels", 1 << 20);
  addEntry(cache, 'a', 1000, {'1', '2'});
  addEntry(cache, 'b', 500, {'3'});
  std::ofstream(cache.dir() + "/notes.txt") << "mine";
  fs::create_symlink(scratch / "elsewhere.so", cache.dir() + "/" + std::string(32, 'e') + ".so");
  std::ofstream(scratch / "elsewhere.so") << "not the cache's";

  KernelCacheContents before = kernelCacheContents(cache.dir());
  EXPECT_EQ(before.artifacts, 3); // the planted link counts by its name, never followed
  EXPECT_EQ(before.indexes, 3);
  EXPECT_EQ(before.sources, 2);
  EXPECT_EQ(before.others, 1);
  KernelCacheContents removed = clearKernelCache(cache.dir());
  EXPECT_EQ(removed.artifacts, 3);
  EXPECT_EQ(removed.indexes, 3);
  EXPECT_EQ(removed.bytes, before.bytes);
  EXPECT_EQ(kernelCacheContents(cache.dir()).bytes, 0);
  EXPECT_TRUE(fs::exists(cache.dir() + "/notes.txt"));
  EXPECT_TRUE(fs::exists(scratch / "elsewhere.so"));
  EXPECT_EQ(kernelCacheContents(scratch / "absent").bytes, 0);
}

} // namespace
} // namespace loupe::testing
