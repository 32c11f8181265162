// loupe-view: the Loupe trace viewer (docs/viewer.md). This file is the main loop and the
// headless modes; everything the user sees is the Viewer's.
#include <iostream>
#include <string>
#include <vector>

#include "compiler/ir/error.h"
#include "gui/app/benchmark.h"
#include "gui/app/style.h"
#include "gui/app/viewer.h"
#include "gui/app/window.h"
#include "gui/viewmodel/command_line.h"

namespace {

using namespace loupe::view;

// Frames rendered before a screenshot: the first fits the graph, the next settle ImGui's own
// layout (tab bars and child windows size themselves from the previous frame). A screenshot
// is a batch run: before each frame it waits for the work the last one asked for, and it is
// taken from a frame that left nothing pending, so it never shows a spinner.
constexpr int kScreenshotFrames = 4;
// A view that still asks for work after this many frames is a bug, not something to wait out.
constexpr int kMaxScreenshotFrames = 64;

void applyHeadlessState(Viewer& viewer, const CommandLine& cl) {
  if (!viewer.openError().empty()) throw loupe::Error("open", viewer.openError());
  const std::string problem = viewer.applySelection(cl.select);
  if (!problem.empty()) throw loupe::Error("usage", problem);
  if (cl.panel) {
    viewer.panel = *cl.panel;
    viewer.panelChosen = true;
  }
  if (cl.diff) {
    viewer.showDiff(cl.diff->first, cl.diff->second);
    viewer.finishPendingWork();
    if (!viewer.diff().error.empty()) throw loupe::Error("usage", viewer.diff().error);
    if (!cl.select.node.empty() && !viewer.selectInDiff(cl.select.node))
      throw loupe::Error("usage",
                         "no node '%" + cl.select.node + "' in the diff view's first compile");
  }
}

int run(const CommandLine& cl) {
  // An unreadable trace fails a headless run before a window (and a display) is needed.
  if (!cl.screenshotPath.empty() || cl.benchmark) {
    if (const OpenedTrace check = openTrace(cl.tracePath); !check)
      throw loupe::Error("open", check.error);
  }
  Window window(cl.width, cl.height, "loupe-view");
  Viewer viewer(loadFonts());
  window.queueKeyPressesInto(&viewer.keyPresses());
  applyDarkStyle();
  viewer.rememberOpened = cl.screenshotPath.empty() && !cl.benchmark;
  if (cl.benchmark) return runBenchmark(window, viewer, cl.tracePath);
  if (!cl.tracePath.empty()) viewer.open(cl.tracePath);
  if (!cl.screenshotPath.empty()) {
    window.ignorePointer();
    applyHeadlessState(viewer, cl);
  }
  const bool screenshot = !cl.screenshotPath.empty();
  for (int frame = 0; !viewer.quitRequested && window.beginFrame(); ++frame) {
    for (const std::string& path : window.takeDroppedPaths())
      viewer.open(path);
    if (screenshot) viewer.finishPendingWork();
    viewer.drawFrame();
    const bool last = screenshot && frame + 1 >= kScreenshotFrames && !viewer.workPending();
    if (screenshot && !last && frame + 1 >= kMaxScreenshotFrames)
      throw loupe::Error("screenshot", "the view still had work pending after " +
                                           std::to_string(kMaxScreenshotFrames) + " frames");
    window.endFrame(last ? cl.screenshotPath : std::string());
    if (last) return 0;
  }
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  CommandLine cl;
  try {
    cl = parseCommandLine(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const loupe::Error& e) {
    std::cerr << "loupe-view: " << e.message() << '\n';
    return 2;
  }
  if (cl.help) {
    std::cout << usageText();
    return 0;
  }
  try {
    return run(cl);
  } catch (const std::exception& e) {
    const auto* error = dynamic_cast<const loupe::Error*>(&e);
    std::cerr << "loupe-view: " << (error != nullptr ? error->message() : std::string(e.what()))
              << '\n';
    return 1;
  }
}
