#include "gui/app/benchmark.h"

#include <GL/gl.h>
#include <GLFW/glfw3.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

#include "gui/app/viewer.h"
#include "gui/app/window.h"

namespace loupe::view {
namespace {

constexpr int kPanFrames = 240;

double timeMs(const std::function<void()>& work) {
  const auto start = std::chrono::steady_clock::now();
  work();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

// A frame's time building the UI (our code and ImGui's, on the CPU) and in all, with the
// rasterisation: under Xvfb that is Mesa's software renderer, which a GPU makes negligible.
struct FrameTime {
  double buildMs = 0, totalMs = 0;
};

FrameTime renderFrame(Window& window, Viewer& viewer) {
  FrameTime t;
  t.buildMs = timeMs([&] {
    window.beginFrame();
    viewer.drawFrame();
  });
  t.totalMs = t.buildMs + timeMs([&] {
                window.endFrame();
                glFinish();
              });
  return t;
}

double percentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  return values[static_cast<size_t>(p * static_cast<double>(values.size() - 1))];
}

} // namespace

int runBenchmark(Window& window, Viewer& viewer, const std::string& tracePath) {
  glfwSwapInterval(0); // measure frames, not the display's refresh
  window.ignorePointer();
  bool opened = false;
  const double openMs = timeMs([&] { opened = viewer.open(tracePath); });
  const PassItem* pass = viewer.pass();
  if (!opened || pass == nullptr || !pass->snapshotId || viewer.canvas().model() == nullptr) {
    std::fprintf(stderr, "loupe-view: %s: nothing to benchmark (%s)\n", tracePath.c_str(),
                 opened ? "no compile with a graph" : viewer.openError().c_str());
    return 1;
  }
  TraceDocument& document = *viewer.document();
  const LoadedSnapshot& snapshot = document.snapshot(*pass->snapshotId);
  const LayoutOptions& options = document.layoutOptions();
  SceneLayouter cold(snapshot.model, options);
  const Expansion expansion = defaultExpansion(cold.tree());
  const double coldMs = timeMs([&] { cold.layout(expansion); });
  SceneLayouter cached(snapshot.model, options, std::make_shared<LayoutCache>(tracePath),
                       snapshot.hash);
  const double cachedMs = timeMs([&] { cached.layout(expansion); });

  const FrameTime firstFrame = renderFrame(window, viewer);
  viewer.canvas().camera().zoomAt(viewer.canvas().camera().viewport().center(),
                                  1.0f / viewer.canvas().camera().zoom());
  std::vector<double> builds, totals;
  for (int i = 0; i < kPanFrames; ++i) {
    const float direction = (i / 60) % 2 == 0 ? 1.f : -1.f;
    viewer.canvas().camera().panBy({-12 * direction, -5 * direction});
    const FrameTime t = renderFrame(window, viewer);
    builds.push_back(t.buildMs);
    totals.push_back(t.totalMs);
  }
  const SnapshotScene& scene = *viewer.canvas().scene();
  std::printf("trace              %s\n", tracePath.c_str());
  std::printf("boxes              %zu (%zu drawn items, %zu edges, %d dot runs cold)\n",
              snapshot.model->boxes().size(), scene.scene().items.size(),
              scene.scene().edges.size(), cold.graphvizRuns());
  std::printf("open_ms            %.1f\n", openMs);
  std::printf("layout_cold_ms     %.1f\n", coldMs);
  std::printf("layout_cached_ms   %.1f\n", cachedMs);
  std::printf("first_frame_ms     %.1f (building %.1f)\n", firstFrame.totalMs, firstFrame.buildMs);
  std::printf("pan_build_median_ms %.2f\n", percentile(builds, 0.5));
  std::printf("pan_build_p95_ms   %.2f\n", percentile(builds, 0.95));
  std::printf("pan_total_median_ms %.2f\n", percentile(totals, 0.5));
  std::printf("pan_total_p95_ms   %.2f\n", percentile(totals, 0.95));
  return 0;
}

} // namespace loupe::view
