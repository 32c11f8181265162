// Plain 2-D geometry shared by the layout, the camera and the canvas, in layout units
// (Graphviz points, one pixel at zoom 1). No ImGui here, so tests can use it.
#pragma once

#include <algorithm>
#include <vector>

namespace loupe::view {

struct Point {
  float x = 0, y = 0;
  friend bool operator==(const Point&, const Point&) = default;
  friend Point operator+(Point a, Point b) { return {a.x + b.x, a.y + b.y}; }
  friend Point operator-(Point a, Point b) { return {a.x - b.x, a.y - b.y}; }
  friend Point operator*(Point a, float s) { return {a.x * s, a.y * s}; }
};

struct Rect {
  Point min, max;

  float width() const { return max.x - min.x; }
  float height() const { return max.y - min.y; }
  Point center() const { return {(min.x + max.x) / 2, (min.y + max.y) / 2}; }
  bool contains(Point p) const {
    return p.x >= min.x && p.x <= max.x && p.y >= min.y && p.y <= max.y;
  }
  bool contains(const Rect& r) const { return contains(r.min) && contains(r.max); }
  bool overlaps(const Rect& r) const {
    return min.x < r.max.x && r.min.x < max.x && min.y < r.max.y && r.min.y < max.y;
  }
  bool empty() const { return !(max.x > min.x) || !(max.y > min.y); }
  Rect translated(Point d) const { return {min + d, max + d}; }
  Rect expanded(float margin) const {
    return {{min.x - margin, min.y - margin}, {max.x + margin, max.y + margin}};
  }
  // The smallest rect holding both; an empty rect adds nothing.
  Rect united(const Rect& r) const {
    if (r.empty()) return *this;
    if (empty()) return r;
    return {{std::min(min.x, r.min.x), std::min(min.y, r.min.y)},
            {std::max(max.x, r.max.x), std::max(max.y, r.max.y)}};
  }
  friend bool operator==(const Rect&, const Rect&) = default;
};

// The smallest rect holding the points (a Bézier curve lies inside its control points' box,
// so this bounds an edge for culling); empty for no points.
inline Rect boundsOf(const std::vector<Point>& points) {
  if (points.empty()) return {};
  Rect r{points.front(), points.front()};
  for (Point p : points)
    r = {{std::min(r.min.x, p.x), std::min(r.min.y, p.y)},
         {std::max(r.max.x, p.x), std::max(r.max.y, p.y)}};
  return r;
}

} // namespace loupe::view
