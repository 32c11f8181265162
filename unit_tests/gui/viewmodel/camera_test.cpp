// Pan and zoom as the user drives them, and the culling query the canvas draws from.
#include <gtest/gtest.h>

#include <random>

#include "gui/viewmodel/camera.h"
#include "gui/viewmodel/spatial_index.h"

namespace loupe::view {
namespace {

void expectNear(Point a, Point b, float tolerance = 1e-3f) {
  EXPECT_NEAR(a.x, b.x, tolerance);
  EXPECT_NEAR(a.y, b.y, tolerance);
}

Camera cameraAt(Rect viewport) {
  Camera camera;
  camera.setViewport(viewport);
  return camera;
}

TEST(Camera, ScreenAndLayoutRoundTrip) {
  Camera camera = cameraAt({{100, 50}, {900, 650}});
  camera.panBy({-37, 12});
  camera.zoomAt({300, 300}, 2.5f);
  for (Point p : {Point{0, 0}, Point{123.5f, -40}, Point{1e4f, 3e3f}})
    expectNear(camera.toLayout(camera.toScreen(p)), p, 1e-2f);
}

TEST(Camera, ZoomAtPointKeepsThatPointUnderTheMouse) {
  Camera camera = cameraAt({{0, 0}, {800, 600}});
  camera.panBy({50, 20});
  const Point mouse{620, 140};
  const Point under = camera.toLayout(mouse);
  camera.wheel(mouse, 3);
  EXPECT_GT(camera.zoom(), 1.5f);
  expectNear(camera.toScreen(under), mouse);
  camera.wheel(mouse, -5);
  expectNear(camera.toScreen(under), mouse);
}

TEST(Camera, ZoomIsClamped) {
  Camera camera;
  camera.zoomAt({10, 10}, 1e6f);
  EXPECT_FLOAT_EQ(camera.zoom(), Camera::kMaxZoom);
  camera.zoomAt({10, 10}, 1e-9f);
  EXPECT_FLOAT_EQ(camera.zoom(), Camera::kMinZoom);
}

TEST(Camera, DragMovesTheLayoutWithTheMouse) {
  Camera camera = cameraAt({{0, 0}, {800, 600}});
  camera.zoomAt({0, 0}, 2);
  const Point grabbed = camera.toLayout(Point{200, 200});
  camera.panBy({30, -10});
  expectNear(camera.toScreen(grabbed), {230, 190});
}

TEST(Camera, KeysPanAndZoomAboutTheCentre) {
  Camera camera = cameraAt({{0, 0}, {800, 600}});
  const Point centre = camera.toLayout(Point{400, 300});
  camera.key(CameraKey::ZoomIn);
  EXPECT_GT(camera.zoom(), 1);
  expectNear(camera.toLayout(Point{400, 300}), centre);
  const Point before = camera.origin();
  camera.key(CameraKey::PanRight); // the view moves right over the layout
  EXPECT_GT(camera.origin().x, before.x);
  camera.key(CameraKey::PanLeft);
  expectNear(camera.origin(), before);
}

TEST(Camera, FitShowsAllOfTheBoundsCentred) {
  Camera camera = cameraAt({{10, 20}, {810, 620}});
  const Rect big{{-500, 0}, {4500, 20000}};
  camera.fit(big);
  EXPECT_TRUE(camera.visibleRect().contains(big));
  expectNear(camera.toScreen(big.center()), camera.viewport().center(), 0.5f);
  // A small graph is centred at zoom 1, not blown up.
  const Rect small{{0, 0}, {50, 40}};
  camera.fit(small);
  EXPECT_FLOAT_EQ(camera.zoom(), 1);
  EXPECT_TRUE(camera.visibleRect().contains(small));
}

TEST(Camera, MinimapMapsTheWholeLayoutIntoItsRectangle) {
  const Rect layout{{0, 0}, {2000, 10000}};
  const Rect minimap{{600, 400}, {800, 600}};
  const MinimapTransform map(layout, minimap);
  EXPECT_TRUE(minimap.expanded(1e-3f).contains(map.toMinimap(layout)));
  expectNear(map.toMinimap(layout.center()), minimap.center());
  expectNear(map.toLayout(map.toMinimap(Point{1234, 5678})), {1234, 5678}, 0.1f);
}

TEST(SpatialIndex, EdgesAreCulledByTheirControlPointsBox) {
  const std::vector<Point> spline{{0, 0}, {100, -20}, {40, 300}, {10, 200}};
  EXPECT_EQ(boundsOf(spline), (Rect{{0, -20}, {100, 300}}));
  const SpatialIndex index({boundsOf(spline)});
  EXPECT_EQ(index.query({{90, 250}, {500, 260}}), std::vector<int>{0});
  EXPECT_TRUE(index.query({{101, 0}, {500, 10}}).empty());
  EXPECT_TRUE(boundsOf({}).empty());
}

TEST(SpatialIndex, QueryReturnsExactlyTheRectsInView) {
  std::mt19937 random(7);
  std::uniform_real_distribution<float> position(0, 5000), size(10, 120);
  std::vector<Rect> rects;
  for (int i = 0; i < 3000; ++i) {
    const Point p{position(random), position(random)};
    rects.push_back({p, p + Point{size(random), size(random)}});
  }
  const SpatialIndex index(rects);
  for (const Rect view :
       {Rect{{0, 0}, {800, 600}}, Rect{{2400, 1000}, {3100, 1900}}, Rect{{-100, -100}, {-1, -1}}}) {
    std::vector<int> expected;
    for (size_t i = 0; i < rects.size(); ++i)
      if (rects[i].min.x <= view.max.x && view.min.x <= rects[i].max.x &&
          rects[i].min.y <= view.max.y && view.min.y <= rects[i].max.y)
        expected.push_back(static_cast<int>(i));
    EXPECT_EQ(index.query(view), expected);
  }
}

} // namespace
} // namespace loupe::view
