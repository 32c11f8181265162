#include "gui/app/benchmark.h"

#include <GL/gl.h>
#include <GLFW/glfw3.h>

#include <chrono>
#include <cstdio>
#include <functional>

#include "gui/app/viewer.h"
#include "gui/app/window.h"
#include "gui/viewmodel/frame_times.h"

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
              }) -
              window.lastWaitMs(); // the frame rate cap's wait is not the frame's
  t.totalMs = t.buildMs + timeMs([&] {
                window.endFrame();
                glFinish();
              });
  return t;
}

bool graphLoading(Viewer& viewer) {
  const SnapshotScene* scene = viewer.canvas().scene();
  return scene != nullptr && scene->loading();
}

void printTimes(const char* name, const FrameTimes& times) {
  std::printf("%s_median_ms %.2f\n", name, times.percentile(0.5));
  std::printf("%s_p95_ms %.2f\n", name, times.percentile(0.95));
  std::printf("%s_max_ms %.2f\n", name, times.max());
}

} // namespace

int runBenchmark(Window& window, Viewer& viewer, const std::string& tracePath) {
  glfwSwapInterval(0); // measure frames, not the display's refresh
  window.ignorePointer();
  // The frame loop keeps drawing while the worker reads, parses and lays out the first graph
  // (from scratch on a trace's first open): those frames must stay short.
  FrameTimes opening, openingBuild;
  bool opened = false;
  const double openMs = timeMs([&] {
    opened = viewer.open(tracePath);
    while (opened && graphLoading(viewer)) {
      const FrameTime t = renderFrame(window, viewer);
      opening.add(t.totalMs);
      openingBuild.add(t.buildMs);
    }
  });
  viewer.finishPendingWork(); // what the first frames asked for besides the graph
  const PassItem* pass = viewer.pass();
  if (!opened || pass == nullptr || !pass->snapshotId || viewer.canvas().model() == nullptr) {
    std::fprintf(stderr, "loupe-view: %s: nothing to benchmark (%s)\n", tracePath.c_str(),
                 opened ? "no compile with a graph" : viewer.openError().c_str());
    return 1;
  }
  const SnapshotScene& shown = *viewer.canvas().scene();
  const LayoutOptions& options = viewer.document()->layoutOptions();
  SceneLayouter cold(shown.sharedModel(), options);
  const Expansion expansion = defaultExpansion(cold.tree());
  const double coldMs = timeMs([&] { cold.layout(expansion); });
  SceneLayouter cached(shown.sharedModel(), options, std::make_shared<LayoutCache>(tracePath),
                       shown.hash());
  const double cachedMs = timeMs([&] { cached.layout(expansion); });

  const FrameTime firstFrame = renderFrame(window, viewer);
  viewer.canvas().camera().zoomAt(viewer.canvas().camera().viewport().center(),
                                  1.0f / viewer.canvas().camera().zoom());
  FrameTimes builds, totals;
  for (int i = 0; i < kPanFrames; ++i) {
    const float direction = (i / 60) % 2 == 0 ? 1.f : -1.f;
    viewer.canvas().camera().panBy({-12 * direction, -5 * direction});
    const FrameTime t = renderFrame(window, viewer);
    builds.add(t.buildMs);
    totals.add(t.totalMs);
  }
  std::printf("trace              %s\n", tracePath.c_str());
  std::printf("boxes              %zu (%zu drawn items, %zu edges, %d dot runs cold)\n",
              shown.model().boxes().size(), shown.scene().items.size(), shown.scene().edges.size(),
              cold.graphvizRuns());
  std::printf("open_ms            %.1f\n", openMs);
  std::printf("open_frames        %zu\n", opening.count());
  printTimes("open_frame", opening);
  printTimes("open_frame_build", openingBuild);
  std::printf("layout_cold_ms     %.1f\n", coldMs);
  std::printf("layout_cached_ms   %.1f\n", cachedMs);
  std::printf("first_frame_ms     %.1f (building %.1f)\n", firstFrame.totalMs, firstFrame.buildMs);
  std::printf("pan_build_median_ms %.2f\n", builds.percentile(0.5));
  std::printf("pan_build_p95_ms   %.2f\n", builds.percentile(0.95));
  std::printf("pan_total_median_ms %.2f\n", totals.percentile(0.5));
  std::printf("pan_total_p95_ms   %.2f\n", totals.percentile(0.95));
  return 0;
}

} // namespace loupe::view
