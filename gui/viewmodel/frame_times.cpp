#include "gui/viewmodel/frame_times.h"

#include <algorithm>

namespace loupe::view {

double FrameTimes::percentile(double p) const {
  if (ms_.empty()) return 0;
  std::vector<double> sorted = ms_;
  std::sort(sorted.begin(), sorted.end());
  return sorted[static_cast<size_t>(std::clamp(p, 0.0, 1.0) *
                                    static_cast<double>(sorted.size() - 1))];
}

} // namespace loupe::view
