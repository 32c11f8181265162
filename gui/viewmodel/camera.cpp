#include "gui/viewmodel/camera.h"

#include <algorithm>
#include <cmath>

namespace loupe::view {

Point Camera::toScreen(Point layout) const {
  return viewport_.min + (layout - origin_) * zoom_;
}

Point Camera::toLayout(Point screen) const {
  return origin_ + (screen - viewport_.min) * (1 / zoom_);
}

Rect Camera::toScreen(const Rect& layout) const {
  return {toScreen(layout.min), toScreen(layout.max)};
}

Rect Camera::toLayout(const Rect& screen) const {
  return {toLayout(screen.min), toLayout(screen.max)};
}

void Camera::panBy(Point screenDelta) {
  origin_ = origin_ - screenDelta * (1 / zoom_);
}

void Camera::zoomAt(Point screen, float factor) {
  const Point anchor = toLayout(screen);
  zoom_ = std::clamp(zoom_ * factor, kMinZoom, kMaxZoom);
  // Solve toScreen(anchor) == screen for the origin.
  origin_ = anchor - (screen - viewport_.min) * (1 / zoom_);
}

void Camera::wheel(Point screen, float notches) {
  zoomAt(screen, std::pow(kWheelStep, notches));
}

void Camera::key(CameraKey key) {
  switch (key) {
  case CameraKey::PanLeft:
    return panBy({kKeyPanPixels, 0});
  case CameraKey::PanRight:
    return panBy({-kKeyPanPixels, 0});
  case CameraKey::PanUp:
    return panBy({0, kKeyPanPixels});
  case CameraKey::PanDown:
    return panBy({0, -kKeyPanPixels});
  case CameraKey::ZoomIn:
    return zoomAt(viewport_.center(), kWheelStep);
  case CameraKey::ZoomOut:
    return zoomAt(viewport_.center(), 1 / kWheelStep);
  }
}

void Camera::fit(const Rect& bounds, float margin) {
  const float width = std::max(viewport_.width() - 2 * margin, 1.0f);
  const float height = std::max(viewport_.height() - 2 * margin, 1.0f);
  const float scale =
      std::min(width / std::max(bounds.width(), 1.0f), height / std::max(bounds.height(), 1.0f));
  zoom_ = std::clamp(std::min(scale, 1.0f), kMinZoom, kMaxZoom);
  centerOn(bounds.center());
}

void Camera::centerOn(Point layout) {
  origin_ = layout - (viewport_.center() - viewport_.min) * (1 / zoom_);
}

MinimapTransform::MinimapTransform(const Rect& layoutBounds, const Rect& minimapScreen) {
  scale_ = std::min(minimapScreen.width() / std::max(layoutBounds.width(), 1.0f),
                    minimapScreen.height() / std::max(layoutBounds.height(), 1.0f));
  // Centre the scaled layout in the minimap rectangle.
  const Point used{layoutBounds.width() * scale_, layoutBounds.height() * scale_};
  screenMin_ =
      minimapScreen.min + (Point{minimapScreen.width(), minimapScreen.height()} - used) * 0.5f;
  layoutMin_ = layoutBounds.min;
}

Point MinimapTransform::toMinimap(Point layout) const {
  return screenMin_ + (layout - layoutMin_) * scale_;
}

Point MinimapTransform::toLayout(Point minimap) const {
  return layoutMin_ + (minimap - screenMin_) * (1 / scale_);
}

Rect MinimapTransform::toMinimap(const Rect& layout) const {
  return {toMinimap(layout.min), toMinimap(layout.max)};
}

} // namespace loupe::view
