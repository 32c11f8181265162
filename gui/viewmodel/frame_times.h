// Frame durations and their percentiles, for --benchmark: how long frames took while panning,
// and while the worker opened a graph (the frame loop must keep drawing meanwhile).
#pragma once

#include <cstddef>
#include <vector>

namespace loupe::view {

class FrameTimes {
public:
  void add(double ms) { ms_.push_back(ms); }
  size_t count() const { return ms_.size(); }
  // The value below which a fraction p of the frames fall (the sample at p * (count - 1),
  // rounded down); 0 when there are none.
  double percentile(double p) const;
  double max() const { return percentile(1); }

private:
  std::vector<double> ms_;
};

} // namespace loupe::view
