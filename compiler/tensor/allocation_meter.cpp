#include "compiler/tensor/allocation_meter.h"

namespace loupe {

namespace {
thread_local std::shared_ptr<AllocationMeter::Counts> activeCounts;
} // namespace

AllocationMeter::AllocationMeter(int64_t heldBytes)
    : counts_(std::make_shared<Counts>()), enclosing_(std::move(activeCounts)) {
  counts_->allocated(heldBytes);
  activeCounts = counts_;
}

AllocationMeter::~AllocationMeter() {
  activeCounts = std::move(enclosing_);
}

const std::shared_ptr<AllocationMeter::Counts>& AllocationMeter::active() {
  return activeCounts;
}

} // namespace loupe
