// `loupe cache`: where the kernel cache is, how much it holds against its limit, and whether
// Loupe would use it; with --clear, empties it of the files it recognises as its own.
#include <cstdio>
#include <iostream>

#include "compiler/codegen/kernel_cache.h"
#include "tools/loupe/commands.h"

namespace loupe::cli {

namespace {

std::string sizeText(int64_t bytes) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(units)) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  bool whole = value == static_cast<double>(static_cast<int64_t>(value));
  std::snprintf(text, sizeof text, whole ? "%.0f %s" : "%.1f %s", value, units[unit]);
  return text;
}

} // namespace

int runCache(const CacheOptions& options) {
  KernelCacheLocation location = configuredKernelCacheLocation();
  const int64_t limit = configuredKernelCacheLimit();
  std::string problem = kernelCacheProblem(location);
  if (options.clear) {
    if (!problem.empty()) {
      printError("cache: not clearing " + location.dir + ": " + problem);
      return 1;
    }
    KernelCacheContents removed = clearKernelCache(location.dir);
    std::cout << "cleared " << location.dir << ": removed " << removed.artifacts << " libraries, "
              << removed.indexes << " kernels (" << sizeText(removed.bytes) << ")\n";
    int left = kernelCacheContents(location.dir).temporaries;
    if (left) std::cout << "left " << left << " files being written by a build\n";
    return 0;
  }

  KernelCacheContents contents = kernelCacheContents(location.dir);
  std::cout << "kernel cache: " << location.dir << "\n";
  if (!problem.empty())
    std::cout << "refused:      " << problem
              << " (Loupe caches kernels in a private temporary folder instead)\n";
  std::cout << "size:         " << sizeText(contents.bytes) << " of " << sizeText(limit)
            << " (LOUPE_CACHE_MAX_MB)\n";
  std::cout << "libraries:    " << contents.artifacts << "\n";
  std::cout << "kernels:      " << contents.indexes << "\n";
  if (contents.temporaries) std::cout << "being written: " << contents.temporaries << " files\n";
  if (contents.others) std::cout << "other files:  " << contents.others << " (left alone)\n";
  return 0;
}

} // namespace loupe::cli
