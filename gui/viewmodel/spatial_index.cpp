#include "gui/viewmodel/spatial_index.h"

#include <algorithm>
#include <cmath>

namespace loupe::view {
namespace {

// Bounds the grid's memory for very spread-out layouts: beyond this, cells grow instead.
constexpr int kMaxCells = 1 << 20;

} // namespace

SpatialIndex::SpatialIndex(std::vector<Rect> rects, float cellSize) : rects_(std::move(rects)) {
  if (rects_.empty()) return;
  bounds_ = rects_.front();
  float totalExtent = 0;
  for (const Rect& r : rects_) {
    bounds_ = {{std::min(bounds_.min.x, r.min.x), std::min(bounds_.min.y, r.min.y)},
               {std::max(bounds_.max.x, r.max.x), std::max(bounds_.max.y, r.max.y)}};
    totalExtent += std::max(r.width(), r.height());
  }
  // About two average rects per cell side: each rect lands in a few cells.
  cell_ =
      cellSize > 0 ? cellSize : std::max(2 * totalExtent / static_cast<float>(rects_.size()), 1.0f);
  auto count = [&](float extent) {
    return std::max(1, static_cast<int>(std::ceil(extent / cell_)));
  };
  while (static_cast<int64_t>(count(bounds_.width())) * count(bounds_.height()) > kMaxCells)
    cell_ *= 2;
  columns_ = count(bounds_.width());
  rows_ = count(bounds_.height());
  cells_.resize(static_cast<size_t>(columns_) * static_cast<size_t>(rows_));
  for (size_t i = 0; i < rects_.size(); ++i) {
    const CellRange c = cellsOf(rects_[i]);
    for (int y = c.y0; y <= c.y1; ++y)
      for (int x = c.x0; x <= c.x1; ++x)
        cells_[static_cast<size_t>(y * columns_ + x)].push_back(static_cast<int>(i));
  }
}

SpatialIndex::CellRange SpatialIndex::cellsOf(const Rect& r) const {
  auto column = [&](float x) {
    return std::clamp(static_cast<int>((x - bounds_.min.x) / cell_), 0, columns_ - 1);
  };
  auto row = [&](float y) {
    return std::clamp(static_cast<int>((y - bounds_.min.y) / cell_), 0, rows_ - 1);
  };
  return {column(r.min.x), column(r.max.x), row(r.min.y), row(r.max.y)};
}

std::vector<int> SpatialIndex::query(const Rect& area) const {
  std::vector<int> found;
  if (rects_.empty() || area.max.x < bounds_.min.x || area.max.y < bounds_.min.y ||
      area.min.x > bounds_.max.x || area.min.y > bounds_.max.y)
    return found;
  const CellRange c = cellsOf(area);
  auto touches = [&](const Rect& r) {
    return r.min.x <= area.max.x && area.min.x <= r.max.x && r.min.y <= area.max.y &&
           area.min.y <= r.max.y;
  };
  for (int y = c.y0; y <= c.y1; ++y)
    for (int x = c.x0; x <= c.x1; ++x)
      for (int i : cells_[static_cast<size_t>(y * columns_ + x)])
        if (touches(rects_[static_cast<size_t>(i)])) found.push_back(i);
  std::sort(found.begin(), found.end());
  found.erase(std::unique(found.begin(), found.end()), found.end());
  return found;
}

} // namespace loupe::view
