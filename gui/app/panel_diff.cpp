// The diff view: two compiles side by side with one camera (panning or zooming either side
// moves both), the selected node linked to its match, unmatched and changed nodes coloured;
// and, in the bottom panel, the compile pickers and the differ's findings (the same as
// `loupe diff`), a click on one centring both canvases on it.
#include <filesystem>
#include <string>

#include "gui/app/panels.h"
#include "gui/app/spinner.h"
#include "gui/app/theme.h"
#include "gui/app/viewer.h"

namespace loupe::view {
namespace {

bool compileCombo(const char* label, Viewer& viewer, int64_t& compileId) {
  bool changed = false;
  const std::string current = "compile " + std::to_string(compileId);
  ImGui::SetNextItemWidth(260);
  if (ImGui::BeginCombo(label, compileId >= 0 ? current.c_str() : "-")) {
    for (const RunItem& run : viewer.document()->tree().runs)
      for (const FrameItem& frame : run.frames)
        for (const CompileItem& c : frame.compiles) {
          const std::string item = "compile " + std::to_string(c.compileId) + "  " + c.label;
          if (ImGui::Selectable(item.c_str(), c.compileId == compileId)) {
            compileId = c.compileId;
            changed = true;
          }
        }
    ImGui::EndCombo();
  }
  return changed;
}

// The centre of the selected box's match, as seen on the other canvas.
bool selectedScreenRect(GraphCanvas& canvas, Rect& out) {
  if (canvas.model() == nullptr || canvas.selected() < 0) return false;
  const Scene& scene = canvas.scene()->scene();
  out = canvas.camera().toScreen(scene.items[scene.itemOfBox[canvas.selected()]].rect);
  return canvas.camera().viewport().overlaps(out);
}

// One line of text cut at width (the compile labels name every input and can be long).
void clippedText(const std::string& text, float width) {
  const ImVec2 at = ImGui::GetCursorScreenPos();
  const float height = ImGui::GetTextLineHeight();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->PushClipRect(at, {at.x + width, at.y + height}, true);
  dl->AddText(at, ImGui::GetColorU32(ImGuiCol_Text), text.c_str());
  dl->PopClipRect();
  ImGui::Dummy({width, height});
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", text.c_str());
}

void legend(uint32_t color, const char* text) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 p = ImGui::GetCursorScreenPos();
  const float h = ImGui::GetTextLineHeight();
  dl->AddRectFilled({p.x, p.y + 2}, {p.x + h - 4, p.y + h - 2}, imColor(color), 2);
  ImGui::Dummy({h, h});
  ImGui::SameLine(0, 2);
  ImGui::TextDisabled("%s", text);
  ImGui::SameLine(0, 14);
}

} // namespace

void drawDiffCanvases(Viewer& viewer, float height) {
  DiffState& diff = viewer.diff();
  if (diff.pending) {
    pendingText("comparing the compiles and laying out both graphs...");
    return;
  }
  if (!diff.view) {
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(imColor(Palette::error)), "%s",
                       diff.error.c_str());
    return;
  }
  const DiffView& v = *diff.view;
  const float half = ImGui::GetContentRegionAvail().x / 2;
  clippedText(v.report.labelA, half - 8);
  ImGui::SameLine(half + 4);
  clippedText(v.report.labelB, half - 8);
  legend(Palette::unmatchedFill, "only on one side");
  legend(Palette::changedFill, "changed");
  legend(Palette::selectionFill, "selected, linked to its match");
  ImGui::TextDisabled("after %s", v.pass.c_str());

  const float gap = 6;
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const ImVec2 size{(avail.x - gap) / 2, std::min(avail.y, height)};
  const auto left = diff.left.draw("##left", size, viewer.fonts());
  ImGui::SameLine(0, gap);
  const auto right = diff.right.draw("##right", size, viewer.fonts());

  // One camera for both: whichever side moved leads; the other keeps its own viewport.
  auto follow = [](GraphCanvas& leader, GraphCanvas& follower) {
    const Rect viewport = follower.camera().viewport();
    follower.camera() = leader.camera();
    follower.camera().setViewport(viewport);
  };
  if (left.cameraMoved)
    follow(diff.left, diff.right);
  else if (right.cameraMoved)
    follow(diff.right, diff.left);
  if (left.clicked >= 0) {
    diff.right.select(v.match.aToB[left.clicked]);
    diff.inspectRight = false;
  }
  if (right.clicked >= 0) {
    diff.left.select(v.match.bToA[right.clicked]);
    diff.inspectRight = true;
  }

  Rect a, b;
  if (selectedScreenRect(diff.left, a) && selectedScreenRect(diff.right, b)) {
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const ImVec2 from{a.max.x, a.center().y}, to{b.min.x, b.center().y};
    dl->AddBezierCubic(from, {from.x + 60, from.y}, {to.x - 60, to.y}, to,
                       imColor(Palette::diffLink), 2.5f);
    dl->AddCircleFilled(from, 4, imColor(Palette::diffLink));
    dl->AddCircleFilled(to, 4, imColor(Palette::diffLink));
  }
}

void drawDiffFindings(Viewer& viewer) {
  DiffState& diff = viewer.diff();
  int64_t a = diff.compileA, b = diff.compileB;
  const bool changed = compileCombo("##a", viewer, a);
  ImGui::SameLine();
  ImGui::TextUnformatted("vs");
  ImGui::SameLine();
  if ((compileCombo("##b", viewer, b) || changed) && a >= 0 && b >= 0) viewer.showDiff(a, b);
  if (diff.pending) {
    pendingText("running the differ...");
    return;
  }
  if (!diff.view) {
    if (!diff.error.empty())
      ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(imColor(Palette::error)), "%s",
                         diff.error.c_str());
    return;
  }
  const diff::DiffReport& report = diff.view->report;
  if (report.same)
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(imColor(Palette::timelineChangedBar)),
                       "The compiles differ only in shapes.");
  constexpr ImGuiTableFlags kFlags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV |
                                     ImGuiTableFlags_ScrollY | ImGuiTableFlags_Resizable;
  if (report.findings.empty() || !ImGui::BeginTable("##findings", 4, kFlags)) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("finding", ImGuiTableColumnFlags_WidthFixed, 150);
  ImGui::TableSetupColumn("pass", ImGuiTableColumnFlags_WidthFixed, 150);
  ImGui::TableSetupColumn("where", ImGuiTableColumnFlags_WidthFixed, 190);
  ImGui::TableSetupColumn("what (click to centre both graphs on it)");
  ImGui::TableHeadersRow();
  for (int i = 0; i < static_cast<int>(report.findings.size()); ++i) {
    const diff::Finding& f = report.findings[i];
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::PushID(i);
    if (ImGui::Selectable(f.kind.c_str(), diff.focusedFinding == i,
                          ImGuiSelectableFlags_SpanAllColumns |
                              ImGuiSelectableFlags_AllowItemOverlap))
      viewer.focusFinding(i);
    ImGui::PopID();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(f.pass.c_str());
    ImGui::TableNextColumn();
    if (f.source)
      ImGui::Text("%s:%d", std::filesystem::path(f.source->file).filename().c_str(),
                  f.source->line);
    ImGui::TableNextColumn();
    ImGui::TextWrapped("%s", f.message.c_str());
  }
  ImGui::EndTable();
}

} // namespace loupe::view
