#include "gui/app/viewer.h"

#include <GLFW/glfw3.h>

#include <filesystem>
#include <iterator>

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

bool keyPressed(int glfwKey) {
  return ImGui::IsKeyPressed(glfwKey, true);
}

} // namespace

Viewer::Viewer(Fonts fonts) : fonts_(fonts) {}

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
  document_ = std::make_unique<TraceDocument>(std::move(opened), path, layoutOptionsFor(fonts_));
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
  const PassItem& p = c->passes[passIndex];
  if (!p.snapshotId) {
    canvas_.setScene(std::make_shared<SnapshotScene>(
        "pass " + p.info.name + " left no graph" +
        (p.info.error_message ? ": " + *p.info.error_message : "")));
    return;
  }
  canvas_.setScene(document_->scene(*p.snapshotId));
  stepDueInFrames_ = 2;
  if (!keepSelected.empty() && canvas_.model() != nullptr) {
    const int box = canvas_.model()->findByName(keepSelected);
    if (box >= 0) canvas_.select(box);
  }
}

void Viewer::computePassStep() {
  const CompileItem* c = compile();
  const PassItem* p = pass();
  if (c == nullptr || p == nullptr || !p->snapshotId) return;
  for (int before = passIndex_ - 1; before >= 0; --before) {
    if (!c->passes[before].snapshotId) continue;
    auto previous = document_->model(*c->passes[before].snapshotId);
    auto current = document_->model(*p->snapshotId);
    if (previous && current) {
      passStep_ = stepPass(*previous, *current);
      canvas_.setMarks(marksOf(passStep_->after));
      for (int box : passStep_->removed)
        removedNodes_.push_back(previous->boxes()[box].title());
    }
    return;
  }
}

Inspected Viewer::inspected() {
  if (!diffShown()) return {&canvas_, compileId_};
  return diff_.inspectRight ? Inspected{&diff_.right, diff_.compileB}
                            : Inspected{&diff_.left, diff_.compileA};
}

void Viewer::showDiff(int64_t compileA, int64_t compileB) {
  diff_ = DiffState();
  diff_.compileA = compileA;
  diff_.compileB = compileB;
  panel = PanelTab::Diff;
  panelChosen = true;
  if (!document_) return;
  try {
    diff_.view = buildDiffView(document_->reader(), compileA, compileB);
  } catch (const std::exception& e) {
    diff_.error = e.what();
    return;
  }
  const DiffView& v = *diff_.view;
  const auto& options = document_->layoutOptions();
  diff_.left.setScene(
      std::make_shared<SnapshotScene>(v.a, v.hashA, options, document_->layoutCache()));
  diff_.right.setScene(
      std::make_shared<SnapshotScene>(v.b, v.hashB, options, document_->layoutCache()));
  diff_.left.setMarks(marksOf(v.statusA));
  diff_.right.setMarks(marksOf(v.statusB));
  // The top finding is the likeliest culprit: show it first.
  focusFinding(0);
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

void Viewer::ensureDefaultDiff() {
  if (panel != PanelTab::Diff || diff_.compileA >= 0 || !document_) return;
  const auto pairs = diff::recompilePairs(document_->reader());
  if (!pairs.empty()) {
    showDiff(pairs.front().first, pairs.front().second);
    return;
  }
  std::vector<int64_t> ids;
  for (const RunItem& run : document_->tree().runs)
    for (const FrameItem& frame : run.frames)
      for (const CompileItem& c : frame.compiles)
        ids.push_back(c.compileId);
  if (ids.size() >= 2)
    showDiff(ids[0], ids[1]);
  else
    diff_.error =
        "The diff view needs two compiles; this trace has " + std::to_string(ids.size()) + ".";
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
  if (!selection.node.empty() && !canvas_.selectByName(selection.node))
    return "no node '%" + selection.node + "' in the selected snapshot";
  return {};
}

void Viewer::handleKeys() {
  const ImGuiIO& io = ImGui::GetIO();
  if (io.KeyCtrl && keyPressed(GLFW_KEY_F)) {
    searchOpen_ = true;
    focusSearch_ = true;
  }
  if (io.WantTextInput) return;
  const bool inDiff = diffShown();
  std::vector<GraphCanvas*> canvases =
      inDiff ? std::vector{&diff_.left, &diff_.right} : std::vector{&canvas_};
  for (GraphCanvas* c : canvases) {
    if ((!io.KeyCtrl && keyPressed(GLFW_KEY_F)) || keyPressed(GLFW_KEY_HOME)) c->requestFit();
    if (keyPressed(GLFW_KEY_EQUAL) || keyPressed(GLFW_KEY_KP_ADD))
      c->camera().key(CameraKey::ZoomIn);
    if (keyPressed(GLFW_KEY_MINUS) || keyPressed(GLFW_KEY_KP_SUBTRACT))
      c->camera().key(CameraKey::ZoomOut);
  }
  if (!inDiff && keyPressed(GLFW_KEY_LEFT)) selectPass(passIndex_ - 1);
  if (!inDiff && keyPressed(GLFW_KEY_RIGHT)) selectPass(passIndex_ + 1);
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

  const ImGuiIO& io = ImGui::GetIO();
  if (io.KeyCtrl && keyPressed(GLFW_KEY_O)) openDialog_ = true;
  if (io.KeyCtrl && keyPressed(GLFW_KEY_Q)) quitRequested = true;
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
  if (ImGui::SmallButton("x") || (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape))))
    searchOpen_ = false;
}

void Viewer::drawCentre(float height) {
  ensureDefaultDiff();
  if (panel == PanelTab::Diff && (diff_.view || !diff_.error.empty())) {
    drawDiffCanvases(*this, height);
    return;
  }
  drawPassTimeline(*this);
  drawSearchBar();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  if (canvas_.draw("##canvas", avail, fonts_).clicked >= 0) selectedKernel = -1; // follow the node
}

void Viewer::drawFrame() {
  // What a pass changed needs the previous snapshot parsed and matched: it comes a frame after
  // the graph itself, so a large trace shows its graph first.
  if (stepDueInFrames_ > 0 && --stepDueInFrames_ == 0) computePassStep();
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
