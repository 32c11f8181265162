// Large host blocks kept for reuse after their tensor is freed, so that a call which allocates
// the same big buffers every time (a library kernel's workspaces: oneDNN's blocked copies of a
// convolution's input and result, im2col's columns; the outputs handed to torch) does not pay
// the kernel's page faults on each of them again. glibc returns such blocks to the system
// (mmap, or a trimmed heap) and the next call faults every page back in: a 3x3 convolution over
// [8,32,128,128] took 20.8 ms a call against torch's 10.9, and 10.2 with glibc's returning
// turned off (docs/cpu-codegen.md, "Host memory").
//
// Only blocks of at least kMinCachedBytes are kept, rounded up to a size class (an eighth of
// their power of two, so at most 1/8 is wasted), up to a limit on the bytes kept idle:
// $LOUPE_HOST_CACHE_MB megabytes, 256 by default, 0 to keep none. A freed block that would pass
// the limit goes back to the system. Builds with AddressSanitizer keep none, so that it still
// sees every use after free.
#pragma once

#include <cstddef>
#include <cstdint>

namespace loupe {

class HostBlockCache {
public:
  static constexpr size_t kMinCachedBytes = size_t{1} << 20;

  // The process's cache, its limit read from the environment on first use.
  static HostBlockCache& global();

  explicit HostBlockCache(size_t limitBytes);
  ~HostBlockCache();
  HostBlockCache(const HostBlockCache&) = delete;
  HostBlockCache& operator=(const HostBlockCache&) = delete;

  // A 64-byte-aligned block of at least `bytes` (never zero-sized); null when the system has no
  // memory left. Uninitialised: a reused block holds its last tensor's bytes.
  void* allocate(size_t bytes);
  // Gives back a block that allocate(bytes) returned, with the same `bytes`.
  void free(void* block, size_t bytes);

  // What a request of `bytes` is rounded up to: a size class, or a multiple of 64 below them.
  static size_t roundedSize(size_t bytes);

  size_t cachedBytes() const; // idle blocks held now
  size_t limitBytes() const { return limit_; }
  void clear(); // every idle block back to the system

private:
  struct State;
  size_t limit_;
  State* state_;
};

} // namespace loupe
