// The cache of large host blocks behind Tensor::empty: blocks of a size class handed out again,
// small ones never kept, the limit on idle bytes held, and the allocation meter still charged
// for a reused block.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "compiler/tensor/allocation_meter.h"
#include "compiler/tensor/host_block_cache.h"
#include "compiler/tensor/tensor.h"

namespace loupe::testing {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

TEST(HostBlockCache, SizeClassesWasteAtMostAnEighth) {
  EXPECT_EQ(HostBlockCache::roundedSize(0), 64u);
  EXPECT_EQ(HostBlockCache::roundedSize(65), 128u);
  size_t previous = 0;
  for (size_t bytes = kMiB - 100; bytes < 80 * kMiB; bytes = bytes * 9 / 8 + 4097) {
    size_t rounded = HostBlockCache::roundedSize(bytes);
    EXPECT_GE(rounded, bytes);
    EXPECT_LE(rounded - bytes, bytes / 8) << bytes;
    EXPECT_EQ(rounded % 64, 0u);
    EXPECT_GE(rounded, previous); // monotone
    previous = rounded;
  }
}

TEST(HostBlockCache, ALargeBlockIsHandedOutAgainAndASmallOneIsNot) {
  HostBlockCache cache(64 * kMiB);
  void* large = cache.allocate(3 * kMiB + 5);
  ASSERT_NE(large, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(large) % 64, 0u);
  cache.free(large, 3 * kMiB + 5);
  EXPECT_EQ(cache.cachedBytes(), HostBlockCache::roundedSize(3 * kMiB + 5));
  // Another request of the same class gets the block; one of another class does not.
  void* other = cache.allocate(7 * kMiB);
  EXPECT_NE(other, large);
  ASSERT_EQ(HostBlockCache::roundedSize(3 * kMiB + 1000),
            HostBlockCache::roundedSize(3 * kMiB + 5));
  void* again = cache.allocate(3 * kMiB + 1000);
  EXPECT_EQ(again, large);
  EXPECT_EQ(cache.cachedBytes(), 0u);
  cache.free(again, 3 * kMiB + 1000);
  cache.free(other, 7 * kMiB);

  void* small = cache.allocate(4096);
  cache.free(small, 4096);
  EXPECT_EQ(cache.cachedBytes(),
            HostBlockCache::roundedSize(3 * kMiB + 1000) + HostBlockCache::roundedSize(7 * kMiB));
  cache.clear();
  EXPECT_EQ(cache.cachedBytes(), 0u);
}

TEST(HostBlockCache, IdleBytesStayWithinTheLimit) {
  HostBlockCache cache(5 * kMiB);
  std::vector<void*> blocks;
  for (int i = 0; i < 4; ++i)
    blocks.push_back(cache.allocate(2 * kMiB));
  for (void* block : blocks)
    cache.free(block, 2 * kMiB);
  EXPECT_EQ(cache.cachedBytes(), 4 * kMiB); // two kept, two returned to the system

  HostBlockCache none(0);
  void* block = none.allocate(2 * kMiB);
  none.free(block, 2 * kMiB);
  EXPECT_EQ(none.cachedBytes(), 0u);
}

TEST(HostBlockCache, TensorsReuseBlocksAndTheMeterStillCountsThem) {
  if (HostBlockCache::global().limitBytes() == 0)
    GTEST_SKIP() << "the cache keeps nothing in this build or environment";
  const void* first = nullptr;
  {
    Tensor t = Tensor::empty(DType::F32, {3, 1024, 1024});
    first = t.data();
  }
  AllocationMeter meter;
  {
    Tensor t = Tensor::empty(DType::F32, {3, 1024, 1024});
    EXPECT_EQ(t.data(), first);
    EXPECT_EQ(meter.liveBytes(), 12 * static_cast<int64_t>(kMiB));
  }
  EXPECT_EQ(meter.liveBytes(), 0);
  EXPECT_EQ(meter.peakBytes(), 12 * static_cast<int64_t>(kMiB));
}

} // namespace
} // namespace loupe::testing
