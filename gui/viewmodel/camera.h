// The canvas camera: which part of the layout the viewport shows and at what zoom. Layout
// coordinates are Graphviz points (y down); screen coordinates are pixels of the window.
// screen = viewport.min + (layout - origin) * zoom.
#pragma once

#include "gui/viewmodel/geometry.h"

namespace loupe::view {

enum class CameraKey { PanLeft, PanRight, PanUp, PanDown, ZoomIn, ZoomOut };

class Camera {
public:
  static constexpr float kMinZoom = 0.01f, kMaxZoom = 8.0f;
  static constexpr float kWheelStep = 1.15f; // zoom factor per wheel notch
  static constexpr float kKeyPanPixels = 60; // screen pixels per arrow-key press

  void setViewport(const Rect& screen) { viewport_ = screen; }
  const Rect& viewport() const { return viewport_; }
  float zoom() const { return zoom_; }
  Point origin() const { return origin_; } // the layout point at the viewport's top left

  Point toScreen(Point layout) const;
  Point toLayout(Point screen) const;
  Rect toScreen(const Rect& layout) const;
  Rect toLayout(const Rect& screen) const;
  // The part of the layout the viewport shows: what to draw.
  Rect visibleRect() const { return toLayout(viewport_); }

  void panBy(Point screenDelta); // drag: the layout moves with the mouse
  // Multiplies the zoom by factor (clamped), keeping the layout point under `screen` fixed.
  void zoomAt(Point screen, float factor);
  // Wheel notches (positive zooms in) at the mouse position.
  void wheel(Point screen, float notches);
  // Arrow keys pan, +/- zoom about the viewport's centre.
  void key(CameraKey key);
  // Shows all of bounds, centred, with margin screen pixels around it; zooms in no further
  // than 1 so a small graph is not blown up.
  void fit(const Rect& bounds, float margin = 20);
  // Keeps the zoom; puts layout point p at the viewport's centre.
  void centerOn(Point layout);

private:
  Rect viewport_{{0, 0}, {800, 600}};
  Point origin_;
  float zoom_ = 1;
};

// The minimap: the whole layout scaled into a small screen rectangle, preserving aspect.
class MinimapTransform {
public:
  MinimapTransform(const Rect& layoutBounds, const Rect& minimapScreen);

  Point toMinimap(Point layout) const;
  Point toLayout(Point minimap) const; // a click on the minimap centres the camera there
  Rect toMinimap(const Rect& layout) const;

private:
  Point layoutMin_, screenMin_;
  float scale_ = 1;
};

} // namespace loupe::view
