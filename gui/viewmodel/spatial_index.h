// Which rectangles intersect a query rectangle, in time proportional to the answer: a uniform
// grid over the layout's bounds. The canvas asks it each frame for the boxes and edges inside
// the visible rectangle, so a 10k-node graph draws only what is on screen.
#pragma once

#include <vector>

#include "gui/viewmodel/geometry.h"

namespace loupe::view {

class SpatialIndex {
public:
  SpatialIndex() = default;
  // Indexes rects by their position in the vector; cellSize 0 picks one from their sizes.
  explicit SpatialIndex(std::vector<Rect> rects, float cellSize = 0);

  // Indices of the rects overlapping (or touching) area, ascending, each once.
  std::vector<int> query(const Rect& area) const;
  size_t size() const { return rects_.size(); }

private:
  struct CellRange {
    int x0, x1, y0, y1;
  };
  CellRange cellsOf(const Rect& r) const; // clamped to the grid

  std::vector<Rect> rects_;
  Rect bounds_;
  float cell_ = 1;
  int columns_ = 0, rows_ = 0;
  std::vector<std::vector<int>> cells_;
};

} // namespace loupe::view
