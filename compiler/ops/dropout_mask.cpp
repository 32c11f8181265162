#include "compiler/ops/dropout_mask.h"

#include <atomic>

namespace loupe {

namespace {

std::atomic<uint64_t>& stream() {
  static std::atomic<uint64_t> position{0};
  return position;
}

} // namespace

uint64_t reserveDropoutDraws(uint64_t count) {
  return stream().fetch_add(count, std::memory_order_relaxed);
}

void resetDropoutDraws(uint64_t position) {
  stream().store(position, std::memory_order_relaxed);
}

} // namespace loupe
