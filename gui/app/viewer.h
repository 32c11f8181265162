// The viewer's whole state and its frame: what is open and selected, the canvases and the
// panels' view state. main() only runs the loop; tests and --screenshot drive a Viewer
// through the same calls a user's clicks make.
//
// Slow work (reading the trace, parsing, Graphviz layout, the differ) runs on the Viewer's
// background worker: a frame starts by applying the results that arrived, never waits for
// one, and shows a spinner where a result is pending (docs/viewer.md, "Threading").
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gui/app/graph_canvas.h"
#include "gui/app/style.h"
#include "gui/viewmodel/background_worker.h"
#include "gui/viewmodel/command_line.h"
#include "gui/viewmodel/diff_view.h"
#include "gui/viewmodel/key_press_queue.h"
#include "gui/viewmodel/pass_step.h"
#include "gui/viewmodel/recent_files.h"
#include "gui/viewmodel/source_lines.h"
#include "gui/viewmodel/trace_document.h"

namespace loupe::view {

// The diff view's state: two compiles, their canvases, the finding in focus.
struct DiffState {
  int64_t compileA = -1, compileB = -1;
  bool requested = false; // a diff was asked for (the default pair is chosen once)
  bool pending = false;   // the worker is comparing the compiles
  std::optional<DiffView> view;
  std::string error;
  GraphCanvas left, right;
  int focusedFinding = -1;
  bool inspectRight = false; // the inspector shows the side clicked last
};

// What the node inspector shows: a canvas's selection and the compile it belongs to.
struct Inspected {
  GraphCanvas* canvas = nullptr;
  int64_t compileId = -1;
};

class Viewer {
public:
  explicit Viewer(Fonts fonts);
  ~Viewer();

  // Never throws: a trace that cannot be read leaves the previous one open and shows why.
  bool open(const std::string& path);
  void selectCompile(int64_t compileId); // and its last pass
  void selectPass(int passIndex);
  // Compares the two compiles on the worker; the diff tab shows a spinner until it is done.
  void showDiff(int64_t compileA, int64_t compileB);
  void focusFinding(int finding);
  // Selects the node on the diff view's left side and its match on the right.
  bool selectInDiff(const std::string& name);
  // --select, for the batch modes: waits for the graph each part needs. An empty string when
  // every part was found, else what was not.
  std::string applySelection(const Selection& selection);

  // Applies the worker's finished results, then draws; never waits for the worker.
  void drawFrame();
  // Batch modes (--screenshot, --benchmark, tests): waits until every job posted so far, and
  // every job their results post, has run and been applied.
  void finishPendingWork() { worker_.finishAll(); }
  bool workPending() const { return worker_.busy(); }
  BackgroundWorker& worker() { return worker_; }
  // The window's key callback queues presses here; the next frame's shortcuts take them.
  KeyPressQueue& keyPresses() { return keyPresses_; }

  // Read by the panels.
  const Fonts& fonts() const { return fonts_; }
  TraceDocument* document() const { return document_.get(); }
  const std::string& openError() const { return openError_; }
  const CompileItem* compile() const;
  int passIndex() const { return passIndex_; }
  const PassItem* pass() const;
  GraphCanvas& canvas() { return canvas_; }
  bool diffShown() const { return panel == PanelTab::Diff && diff_.view.has_value(); }
  Inspected inspected();
  const std::optional<PassStep>& passStep() const { return passStep_; }
  // Titles of the boxes the current pass removed ("%3 = aten.mm").
  const std::vector<std::string>& removedNodes() const { return removedNodes_; }
  DiffState& diff() { return diff_; }
  SourceLines& sourceLines() { return sourceLines_; }
  RecentFiles& recentFiles() { return recentFiles_; }
  PanelTab panel = PanelTab::Kernels;
  bool panelChosen = false; // a tab was set programmatically this frame
  bool quitRequested = false;
  bool rememberOpened = true; // add opened traces to the recent files (not in headless runs)
  int selectedKernel = -1;    // a row clicked in the kernels panel; -1: follow the selected node

private:
  void drawMenuBar();
  void drawSearchBar();
  void handleKeys();
  void drawCentre(float height);
  void requestDiff(std::optional<std::pair<int64_t, int64_t>> compiles);
  void requestPassStep();

  // First, so that it is destroyed last: jobs in flight refer to what the members below hold.
  BackgroundWorker worker_;
  JobTicket selectionTicket_; // renewed when the pass shown changes
  JobTicket diffTicket_;      // renewed when the compiles compared change
  KeyPressQueue keyPresses_;
  Fonts fonts_;
  std::unique_ptr<TraceDocument> document_;
  std::string openError_;
  int64_t compileId_ = -1;
  int passIndex_ = -1;
  GraphCanvas canvas_;
  std::optional<PassStep> passStep_;
  std::vector<std::string> removedNodes_;
  DiffState diff_;
  SourceLines sourceLines_;
  RecentFiles recentFiles_;
  bool searchOpen_ = false, focusSearch_ = false;
  char searchText_[128] = {};
  char openPath_[1024] = {};
  bool openDialog_ = false;
};

} // namespace loupe::view
