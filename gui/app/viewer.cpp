#include "gui/app/viewer.h"

#include <GLFW/glfw3.h>

#include <filesystem>
#include <iterator>
#include <tuple>
#include <utility>

#include "gui/app/panels.h"
#include "gui/app/theme.h"
#include "inspector/diff/compile_selector.h"

namespace loupe::view {
namespace {

constexpr float kTreeWidth = 270, kInspectorWidth = 360, kTimelineHeight = 66;
constexpr const char* kTabLabels[] = {"Graph breaks", "Guards", "Kernels", "Memory", "Diff"};
constexpr void (*kTabPanels[])(Viewer&) = {drawBreaksPanel, drawGuardsPanel, drawKernelsPanel,
                                           drawMemoryPanel, drawDiffFindings};
static_assert(std::size(kTabLabels) == std::size(kPanelTabNames) &&
              std::size(kTabPanels) == std::size(kTabLabels));

BoxMark markOf(BoxChange change) {
  switch (change) {
  case BoxChange::Added:
    return BoxMark::Added;
  case BoxChange::Rewritten:
    return BoxMark::Rewritten;
  case BoxChange::Unchanged:
  case BoxChange::Removed:
    break;
  }
  return BoxMark::None;
}

BoxMark markOf(DiffStatus status) {
  switch (status) {
  case DiffStatus::Changed:
    return BoxMark::Changed;
  case DiffStatus::Unmatched:
    return BoxMark::Unmatched;
  case DiffStatus::Matched:
    break;
  }
  return BoxMark::None;
}

template <typename Status>
std::vector<BoxMark> marksOf(const std::vector<Status>& statuses) {
  std::vector<BoxMark> marks;
  for (Status s : statuses)
    marks.push_back(markOf(s));
  return marks;
}

// What the worker hands back for a pass step: the boxes the pass changed, and the titles
// of those it removed (the previous snapshot is not loaded on the UI thread).
struct PassStepResult {
  std::optional<PassStep> step;
  std::vector<std::string> removed;
};

// What the worker hands back for the diff view: the compiles compared (the default pair is
// chosen there, since it queries the trace), the view, and both sides laid out.
struct DiffResult {
  int64_t compileA = -1, compileB = -1;
  std::optional<DiffView> view;
  std::string error;
  std::shared_ptr<SnapshotScene> left, right;
};

DiffResult compareOnWorker(TraceSource& source, std::optional<std::pair<int64_t, int64_t>> pair,
                           const std::vector<int64_t>& compiles) {
  DiffResult result;
  if (!pair) {
    // As `loupe diff TRACE` pairs them: the first recompile, else the first two compiles.
    const auto pairs = diff::recompilePairs(source.reader());
    if (!pairs.empty())
      pair = pairs.front();
    else if (compiles.size() >= 2)
      pair = {compiles[0], compiles[1]};
    else
      result.error = "The diff view needs two compiles; this trace has " +
                     std::to_string(compiles.size()) + ".";
  }
  if (!pair) return result;
  std::tie(result.compileA, result.compileB) = *pair;
  try {
    result.view = buildDiffView(source.reader(), pair->first, pair->second);
  } catch (const std::exception& e) {
    result.error = e.what();
    return result;
  }
  result.left = source.buildScene(result.view->a, result.view->hashA);
  result.right = source.buildScene(result.view->b, result.view->hashB);
  return result;
}

} // namespace

Viewer::Viewer(Fonts fonts) : fonts_(fonts) {}

Viewer::~Viewer() = default;

const CompileItem* Viewer::compile() const {
  return document_ ? document_->tree().findCompile(compileId_) : nullptr;
}

const PassItem* Viewer::pass() const {
  const CompileItem* c = compile();
  if (c == nullptr || passIndex_ < 0 || passIndex_ >= static_cast<int>(c->passes.size()))
    return nullptr;
  return &c->passes[passIndex_];
}

bool Viewer::open(const std::string& path) {
  OpenedTrace opened = openTrace(path);
  if (!opened) {
    openError_ = opened.error;
    return false;
  }
  // The old document's jobs stop with it; the selection's and the diff's stop here.
  selectionTicket_.renew();
  diffTicket_.renew();
  document_ =
      std::make_unique<TraceDocument>(std::move(opened), path, layoutOptionsFor(fonts_), worker_);
  openError_.clear();
  if (rememberOpened) recentFiles_.add(path);
  sourceLines_ = SourceLines();
  sourceLines_.setBaseDirectory(std::filesystem::path(path).parent_path().string());
  diff_ = DiffState();
  compileId_ = -1;
  passIndex_ = -1;
  canvas_.setScene(nullptr);
  passStep_.reset();
  for (const RunItem& run : document_->tree().runs)
    for (const FrameItem& frame : run.frames)
      if (!frame.compiles.empty()) {
        selectCompile(frame.compiles.front().compileId);
        return true;
      }
  return true;
}

void Viewer::selectCompile(int64_t compileId) {
  compileId_ = compileId;
  const CompileItem* c = compile();
  int last = -1;
  for (int i = 0; c != nullptr && i < static_cast<int>(c->passes.size()); ++i)
    if (c->passes[i].snapshotId) last = i;
  selectPass(last);
}

void Viewer::selectPass(int passIndex) {
  const CompileItem* c = compile();
  if (c == nullptr || passIndex < 0 || passIndex >= static_cast<int>(c->passes.size())) return;
  const std::string keepSelected = canvas_.model() != nullptr && canvas_.selected() >= 0
                                       ? canvas_.model()->boxes()[canvas_.selected()].name
                                       : "";
  passIndex_ = passIndex;
  passStep_.reset();
  removedNodes_.clear();
  selectionTicket_.renew(); // a pass step on its way is for the pass shown before
  const PassItem& p = c->passes[passIndex];
  if (!p.snapshotId) {
    canvas_.setScene(std::make_shared<SnapshotScene>(
        "pass " + p.info.name + " left no graph" +
        (p.info.error_message ? ": " + *p.info.error_message : "")));
    return;
  }
  canvas_.setScene(document_->scene(*p.snapshotId));
  if (!keepSelected.empty()) canvas_.selectByNameWhenShown(keepSelected);
  requestPassStep();
}

// What the pass changed needs the previous snapshot parsed and matched: posted after the
// graph itself, so the worker, which runs jobs in order, shows the graph first.
void Viewer::requestPassStep() {
  const CompileItem* c = compile();
  const PassItem* p = pass();
  if (c == nullptr || p == nullptr || !p->snapshotId) return;
  int before = passIndex_ - 1;
  while (before >= 0 && !c->passes[before].snapshotId)
    --before;
  if (before < 0) return;
  document_->read(
      selectionTicket_,
      [previousId = *c->passes[before].snapshotId,
       currentId = *p->snapshotId](TraceSource& source) {
        PassStepResult result;
        const auto previous = source.snapshot(previousId).model;
        const auto current = source.snapshot(currentId).model;
        if (previous == nullptr || current == nullptr) return result;
        result.step = stepPass(*previous, *current);
        for (int box : result.step->removed)
          result.removed.push_back(previous->boxes()[box].title());
        return result;
      },
      [this](PassStepResult&& result) {
        if (!result.step) return;
        passStep_ = std::move(result.step);
        removedNodes_ = std::move(result.removed);
        canvas_.setMarks(marksOf(passStep_->after));
      });
}

Inspected Viewer::inspected() {
  if (!diffShown()) return {&canvas_, compileId_};
  return diff_.inspectRight ? Inspected{&diff_.right, diff_.compileB}
                            : Inspected{&diff_.left, diff_.compileA};
}

void Viewer::showDiff(int64_t compileA, int64_t compileB) {
  panel = PanelTab::Diff;
  panelChosen = true;
  requestDiff(std::pair{compileA, compileB});
}

void Viewer::requestDiff(std::optional<std::pair<int64_t, int64_t>> compiles) {
  diffTicket_.renew(); // a comparison on its way is for other compiles
  diff_ = DiffState();
  diff_.requested = true;
  if (compiles) std::tie(diff_.compileA, diff_.compileB) = *compiles;
  if (!document_) return;
  std::vector<int64_t> all;
  for (const RunItem& run : document_->tree().runs)
    for (const FrameItem& frame : run.frames)
      for (const CompileItem& c : frame.compiles)
        all.push_back(c.compileId);
  diff_.pending = true;
  document_->read(
      diffTicket_,
      [compiles, all](TraceSource& source) { return compareOnWorker(source, compiles, all); },
      [this](DiffResult&& result) {
        diff_.pending = false;
        diff_.compileA = result.compileA;
        diff_.compileB = result.compileB;
        diff_.error = std::move(result.error);
        if (!result.view) return;
        diff_.view = std::move(result.view);
        auto show = [this](GraphCanvas& canvas, const std::shared_ptr<SnapshotScene>& scene,
                           const std::vector<DiffStatus>& statuses) {
          scene->layOutOn(&worker_);
          canvas.setScene(scene);
          canvas.setMarks(marksOf(statuses));
        };
        show(diff_.left, result.left, diff_.view->statusA);
        show(diff_.right, result.right, diff_.view->statusB);
        // The top finding is the likeliest culprit: show it first.
        focusFinding(0);
      });
}

void Viewer::focusFinding(int finding) {
  if (!diff_.view || finding < 0 || finding >= static_cast<int>(diff_.view->focus.size())) return;
  diff_.focusedFinding = finding;
  const FindingFocus& focus = diff_.view->focus[finding];
  diff_.left.select(focus.boxA);
  diff_.right.select(focus.boxB);
}

bool Viewer::selectInDiff(const std::string& name) {
  if (!diff_.view || !diff_.left.selectByName(name)) return false;
  diff_.right.select(diff_.view->match.aToB[diff_.left.selected()]);
  return true;
}

std::string Viewer::applySelection(const Selection& selection) {
  if (!document_) return "no trace is open";
  if (selection.compile) {
    if (document_->tree().findCompile(*selection.compile) == nullptr)
      return "no compile " + std::to_string(*selection.compile) + " in " + document_->path();
    selectCompile(*selection.compile);
  }
  if (!selection.pass.empty()) {
    const CompileItem* c = compile();
    int found = -1;
    for (int i = 0; c != nullptr && i < static_cast<int>(c->passes.size()); ++i)
      if (c->passes[i].info.name == selection.pass) found = i;
    if (found < 0)
      return "no pass '" + selection.pass + "' in compile " + std::to_string(compileId_);
    selectPass(found);
  }
  finishPendingWork(); // the graph selected, laid out
  if (!selection.node.empty() && !canvas_.selectByName(selection.node))
    return "no node '%" + selection.node + "' in the selected snapshot";
  finishPendingWork(); // the modules that hid the node, expanded
  return {};
}

// The shortcuts act on every press queued since the last frame, not on the keys down now.
void Viewer::handleKeys() {
  const bool typing = ImGui::GetIO().WantTextInput;
  for (const KeyPress& press : keyPresses_.take()) {
    const bool ctrl = (press.mods & GLFW_MOD_CONTROL) != 0;
    if (ctrl) {
      if (press.key == GLFW_KEY_F) searchOpen_ = focusSearch_ = true;
      if (press.key == GLFW_KEY_O) openDialog_ = true;
      if (press.key == GLFW_KEY_Q) quitRequested = true;
      continue;
    }
    if (press.key == GLFW_KEY_ESCAPE) searchOpen_ = false;
    if (typing) continue; // the key went to the search field or the open dialog
    const bool inDiff = diffShown();
    for (GraphCanvas* c : inDiff ? std::vector{&diff_.left, &diff_.right} : std::vector{&canvas_})
      switch (press.key) {
      case GLFW_KEY_F:
      case GLFW_KEY_HOME:
        c->requestFit();
        break;
      case GLFW_KEY_EQUAL:
      case GLFW_KEY_KP_ADD:
        c->camera().key(CameraKey::ZoomIn);
        break;
      case GLFW_KEY_MINUS:
      case GLFW_KEY_KP_SUBTRACT:
        c->camera().key(CameraKey::ZoomOut);
        break;
      default:
        break;
      }
    if (!inDiff && press.key == GLFW_KEY_LEFT) selectPass(passIndex_ - 1);
    if (!inDiff && press.key == GLFW_KEY_RIGHT) selectPass(passIndex_ + 1);
  }
}

void Viewer::drawMenuBar() {
  if (!ImGui::BeginMenuBar()) return;
  if (ImGui::BeginMenu("File")) {
    if (ImGui::MenuItem("Open...", "Ctrl+O")) openDialog_ = true;
    if (ImGui::BeginMenu("Open Recent", !recentFiles_.paths().empty())) {
      for (const std::string& path : recentFiles_.paths())
        if (ImGui::MenuItem(path.c_str()))
          open(std::string(path)); // a copy: open() reorders the list
      ImGui::EndMenu();
    }
    ImGui::Separator();
    if (ImGui::MenuItem("Quit", "Ctrl+Q")) quitRequested = true;
    ImGui::EndMenu();
  }
  if (ImGui::BeginMenu("View")) {
    if (ImGui::MenuItem("Fit graph", "F")) canvas_.requestFit();
    if (ImGui::MenuItem("Find...", "Ctrl+F")) {
      searchOpen_ = true;
      focusSearch_ = true;
    }
    if (ImGui::MenuItem("Diff view", nullptr, panel == PanelTab::Diff)) {
      panel = PanelTab::Diff;
      panelChosen = true;
    }
    ImGui::EndMenu();
  }
  if (document_) {
    ImGui::SameLine(0, 24);
    ImGui::TextDisabled("%s", document_->path().c_str());
  }
  ImGui::EndMenuBar();

  if (openDialog_) {
    ImGui::OpenPopup("Open trace");
    openDialog_ = false;
  }
  if (ImGui::BeginPopupModal("Open trace", nullptr, ImGuiWindowFlags_AlwaysAutoResize)) {
    ImGui::TextUnformatted("Path of a trace (.db):");
    ImGui::SetNextItemWidth(520);
    if (ImGui::IsWindowAppearing()) ImGui::SetKeyboardFocusHere();
    const bool entered = ImGui::InputText("##path", openPath_, sizeof openPath_,
                                          ImGuiInputTextFlags_EnterReturnsTrue);
    if (ImGui::Button("Open") || entered) {
      open(openPath_);
      ImGui::CloseCurrentPopup();
    }
    ImGui::SameLine();
    if (ImGui::Button("Cancel")) ImGui::CloseCurrentPopup();
    ImGui::EndPopup();
  }
}

void Viewer::drawSearchBar() {
  if (!searchOpen_) return;
  ImGui::SetNextItemWidth(300);
  if (focusSearch_) {
    ImGui::SetKeyboardFocusHere();
    focusSearch_ = false;
  }
  const bool entered =
      ImGui::InputTextWithHint("##search", "op, %name, shape, line:14, module:fc1", searchText_,
                               sizeof searchText_, ImGuiInputTextFlags_EnterReturnsTrue);
  if (ImGui::IsItemEdited()) canvas_.setSearch(searchText_);
  if (entered) {
    canvas_.stepMatch(ImGui::GetIO().KeyShift ? -1 : +1);
    focusSearch_ = true;
  }
  ImGui::SameLine();
  if (ImGui::ArrowButton("##previous", ImGuiDir_Up)) canvas_.stepMatch(-1);
  ImGui::SameLine();
  if (ImGui::ArrowButton("##next", ImGuiDir_Down)) canvas_.stepMatch(+1);
  ImGui::SameLine();
  const auto& results = canvas_.search().results();
  if (results.empty())
    ImGui::TextDisabled(searchText_[0] != '\0' ? "no match" : "");
  else
    ImGui::Text("%d of %zu", canvas_.search().position() + 1, results.size());
  ImGui::SameLine();
  if (ImGui::SmallButton("x")) searchOpen_ = false; // Escape too (handleKeys)
}

void Viewer::drawCentre(float height) {
  // The default pair is chosen once per document, the first time the tab shows.
  if (panel == PanelTab::Diff && !diff_.requested && document_) requestDiff(std::nullopt);
  if (panel == PanelTab::Diff && (diff_.pending || diff_.view || !diff_.error.empty())) {
    drawDiffCanvases(*this, height);
    return;
  }
  drawPassTimeline(*this);
  drawSearchBar();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  if (canvas_.draw("##canvas", avail, fonts_).clicked >= 0) selectedKernel = -1; // follow the node
}

void Viewer::drawFrame() {
  worker_.applyFinished();
  handleKeys();
  const ImGuiViewport* viewport = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(viewport->WorkPos);
  ImGui::SetNextWindowSize(viewport->WorkSize);
  constexpr ImGuiWindowFlags kMainFlags =
      ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_MenuBar |
      ImGuiWindowFlags_NoBringToFrontOnFocus | ImGuiWindowFlags_NoSavedSettings;
  ImGui::Begin("loupe-view", nullptr, kMainFlags);
  drawMenuBar();
  if (!openError_.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, imColor(Palette::error));
    ImGui::TextWrapped("Cannot open: %s", openError_.c_str());
    ImGui::PopStyleColor();
    ImGui::SameLine();
    if (ImGui::SmallButton("Dismiss")) openError_.clear();
  }
  if (!document_) {
    ImGui::Dummy({0, 40});
    ImGui::Indent(40);
    ImGui::TextUnformatted("Open a trace with File > Open, by dropping it on this window,");
    ImGui::TextUnformatted("or with `loupe-view TRACE.db`.");
    ImGui::Dummy({0, 12});
    for (const std::string& path : recentFiles_.paths())
      if (ImGui::Selectable(path.c_str())) open(std::string(path));
    ImGui::End();
    return;
  }

  const ImGuiStyle& style = ImGui::GetStyle();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float bottomHeight = std::max(200.f, avail.y * 0.34f);
  const float topHeight = avail.y - bottomHeight - style.ItemSpacing.y;
  const float centreWidth = avail.x - kTreeWidth - kInspectorWidth - 2 * style.ItemSpacing.x;

  ImGui::BeginChild("##tree", {kTreeWidth, topHeight}, false);
  drawNavigationTree(*this);
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::PushStyleColor(ImGuiCol_ChildBg, imColor(Palette::canvasBg));
  ImGui::BeginChild("##centre", {centreWidth, topHeight}, false,
                    ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse);
  drawCentre(topHeight);
  ImGui::EndChild();
  ImGui::PopStyleColor();
  ImGui::SameLine();
  ImGui::BeginChild("##inspector", {kInspectorWidth, topHeight}, false);
  drawNodeInspector(*this);
  ImGui::EndChild();

  ImGui::PushStyleColor(ImGuiCol_ChildBg, imColor(Palette::bottomPanelBg));
  ImGui::BeginChild("##panels", {0, 0}, false);
  if (ImGui::BeginTabBar("##tabs")) {
    for (size_t i = 0; i < std::size(kTabLabels); ++i) {
      const PanelTab tab = static_cast<PanelTab>(i);
      const ImGuiTabItemFlags flags =
          panelChosen && panel == tab ? ImGuiTabItemFlags_SetSelected : 0;
      if (ImGui::BeginTabItem(kTabLabels[i], nullptr, flags)) {
        if (!panelChosen) panel = tab;
        ImGui::BeginChild("##panel");
        kTabPanels[i](*this);
        ImGui::EndChild();
        ImGui::EndTabItem();
      }
    }
    ImGui::EndTabBar();
  }
  panelChosen = false;
  ImGui::EndChild();
  ImGui::PopStyleColor();
  ImGui::End();
}

} // namespace loupe::view
