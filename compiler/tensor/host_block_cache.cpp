#include "compiler/tensor/host_block_cache.h"

#include <bit>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace loupe {

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kUnderAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kUnderAddressSanitizer = true;
#else
constexpr bool kUnderAddressSanitizer = false;
#endif
#else
constexpr bool kUnderAddressSanitizer = false;
#endif

size_t configuredLimit() {
  if (kUnderAddressSanitizer) return 0;
  constexpr size_t kDefaultMb = 256;
  const char* text = std::getenv("LOUPE_HOST_CACHE_MB");
  if (!text || !*text) return kDefaultMb << 20;
  char* end = nullptr;
  unsigned long long mb = std::strtoull(text, &end, 10);
  // A value that is not a number keeps the default rather than turning the cache off.
  if (*end != '\0') return kDefaultMb << 20;
  return static_cast<size_t>(mb) << 20;
}

} // namespace

struct HostBlockCache::State {
  std::mutex mutex;
  std::map<size_t, std::vector<void*>> idle; // by rounded size
  size_t cached = 0;
};

HostBlockCache& HostBlockCache::global() {
  // Never destroyed: tensors freed during the process's exit (torch's, holding Loupe's outputs)
  // still give their blocks back to it.
  static HostBlockCache* cache = new HostBlockCache(configuredLimit());
  return *cache;
}

HostBlockCache::HostBlockCache(size_t limitBytes) : limit_(limitBytes), state_(new State) {}

HostBlockCache::~HostBlockCache() {
  clear();
  delete state_;
}

size_t HostBlockCache::roundedSize(size_t bytes) {
  if (bytes == 0) bytes = 1;
  if (bytes < kMinCachedBytes) return (bytes + 63) / 64 * 64;
  size_t step = std::bit_floor(bytes) / 8; // at least 128 KiB: a multiple of 64
  return (bytes + step - 1) / step * step;
}

void* HostBlockCache::allocate(size_t bytes) {
  size_t size = roundedSize(bytes);
  if (size >= kMinCachedBytes && limit_ > 0) {
    std::lock_guard lock(state_->mutex);
    auto found = state_->idle.find(size);
    if (found != state_->idle.end() && !found->second.empty()) {
      void* block = found->second.back();
      found->second.pop_back();
      state_->cached -= size;
      return block;
    }
  }
  return std::aligned_alloc(64, size);
}

void HostBlockCache::free(void* block, size_t bytes) {
  if (!block) return;
  size_t size = roundedSize(bytes);
  if (size >= kMinCachedBytes && limit_ > 0) {
    std::lock_guard lock(state_->mutex);
    if (state_->cached + size <= limit_) {
      state_->idle[size].push_back(block);
      state_->cached += size;
      return;
    }
  }
  std::free(block);
}

size_t HostBlockCache::cachedBytes() const {
  std::lock_guard lock(state_->mutex);
  return state_->cached;
}

void HostBlockCache::clear() {
  std::lock_guard lock(state_->mutex);
  for (auto& [size, blocks] : state_->idle)
    for (void* block : blocks)
      std::free(block);
  state_->idle.clear();
  state_->cached = 0;
}

} // namespace loupe
