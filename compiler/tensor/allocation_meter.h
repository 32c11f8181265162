// Counts the bytes Loupe allocates for tensors while a meter is open on the calling thread, and
// their high-water mark. Every allocation of tensor memory goes through Tensor::empty (clones,
// packed copies, the arena, outputs, library kernels' workspaces), which charges the meter open
// on its thread; memory a tensor borrows (torch's, an arena slice) is not an allocation. This is
// how the executable measures what a call uses: by Loupe's own allocations, not by the
// embedder's counters.
//
// A tensor allocated under a meter is credited back to it when freed, on whatever thread and
// even after the meter closed. Meters nest: the innermost open one is charged. Allocations on
// other threads (a kernel's worker threads) charge their own thread's meter, if any.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace loupe {

class AllocationMeter {
public:
  struct Counts {
    std::atomic<int64_t> live{0};
    // Updated by allocations, all made on the meter's thread.
    int64_t peak = 0;
    int64_t spanPeak = 0; // since the span began

    void allocated(int64_t bytes) {
      int64_t now = live.fetch_add(bytes, std::memory_order_relaxed) + bytes;
      if (now > peak) peak = now;
      if (now > spanPeak) spanPeak = now;
    }
    void freed(int64_t bytes) { live.fetch_sub(bytes, std::memory_order_relaxed); }
  };

  // Opens a meter on this thread. `heldBytes` are counted as live from the start: memory the
  // measured work holds without allocating it (an arena kept from an earlier call).
  explicit AllocationMeter(int64_t heldBytes = 0);
  ~AllocationMeter();
  AllocationMeter(const AllocationMeter&) = delete;
  AllocationMeter& operator=(const AllocationMeter&) = delete;

  int64_t liveBytes() const { return counts_->live.load(std::memory_order_relaxed); }
  int64_t peakBytes() const { return counts_->peak; }

  // A span within the metered work (one step of a run): the most bytes live during it above
  // those live when it began, i.e. what it allocated for itself on top (workspaces, copies).
  // Returns the live bytes at its start, which spanPeakAbove takes back.
  int64_t beginSpan() {
    counts_->spanPeak = liveBytes();
    return counts_->spanPeak;
  }
  int64_t spanPeakAbove(int64_t liveAtBegin) const { return counts_->spanPeak - liveAtBegin; }

  // The counts of the meter open on this thread; null when none is.
  static const std::shared_ptr<Counts>& active();

private:
  std::shared_ptr<Counts> counts_;
  std::shared_ptr<Counts> enclosing_; // the meter this one hides until it closes
};

} // namespace loupe
