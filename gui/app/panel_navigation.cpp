// The navigation tree: runs → frames → compiles → passes. Selecting a pass shows its graph.
#include <cstdio>
#include <string>

#include "gui/app/panels.h"
#include "gui/app/theme.h"
#include "gui/app/viewer.h"

namespace loupe::view {
namespace {

void drawPasses(Viewer& viewer, const CompileItem& compile) {
  for (int i = 0; i < static_cast<int>(compile.passes.size()); ++i) {
    const PassItem& p = compile.passes[i];
    const bool selected = viewer.compile() == &compile && viewer.passIndex() == i;
    ImGui::PushID(i);
    if (p.info.status != "ok")
      ImGui::PushStyleColor(ImGuiCol_Text, imColor(Palette::error));
    else if (!p.info.changed)
      ImGui::PushStyleColor(ImGuiCol_Text, imColor(Palette::dimText));
    else
      ImGui::PushStyleColor(ImGuiCol_Text, imColor(Palette::text));
    const std::string label = std::to_string(p.info.ordinal) + "  " + p.info.name;
    if (ImGui::Selectable(label.c_str(), selected)) {
      if (viewer.compile() != &compile) viewer.selectCompile(compile.compileId);
      viewer.selectPass(i);
    }
    ImGui::PopStyleColor();
    char ms[32];
    std::snprintf(ms, sizeof ms, "%.2f ms", p.info.wall_ms);
    ImGui::SameLine(ImGui::GetWindowContentRegionMax().x - ImGui::CalcTextSize(ms).x);
    ImGui::TextDisabled("%s", ms);
    ImGui::PopID();
  }
}

void drawCompile(Viewer& viewer, const CompileItem& compile) {
  const bool isSelected = viewer.compile() == &compile;
  if (isSelected) ImGui::SetNextItemOpen(true, ImGuiCond_Appearing);
  ImGuiTreeNodeFlags flags = ImGuiTreeNodeFlags_OpenOnArrow | ImGuiTreeNodeFlags_SpanAvailWidth;
  if (isSelected) flags |= ImGuiTreeNodeFlags_Selected;
  const std::string label = "compile " + std::to_string(compile.compileId) + "  " + compile.label;
  const bool open =
      ImGui::TreeNodeEx(reinterpret_cast<void*>(static_cast<intptr_t>(compile.compileId)), flags,
                        "%s", label.c_str());
  if (ImGui::IsItemClicked() && !ImGui::IsItemToggledOpen())
    viewer.selectCompile(compile.compileId);
  if (ImGui::IsItemHovered()) {
    ImGui::BeginTooltip();
    ImGui::Text("status %s%s", compile.status.c_str(),
                compile.wallMs
                    ? (", " + std::to_string(static_cast<int>(*compile.wallMs)) + " ms").c_str()
                    : "");
    if (!compile.inputSignature.empty()) ImGui::Text("inputs %s", compile.inputSignature.c_str());
    ImGui::EndTooltip();
  }
  if (!compile.recompileReason.empty()) {
    ImGui::Indent();
    ImGui::PushStyleColor(ImGuiCol_Text, imColor(Palette::searchMatch));
    constexpr size_t kShown = 40; // the whole reason is in the tooltip
    const std::string& reason = compile.recompileReason;
    ImGui::Text("recompiled: %s%s", reason.substr(0, kShown).c_str(),
                reason.size() > kShown ? "..." : "");
    ImGui::PopStyleColor();
    if (ImGui::IsItemHovered()) {
      ImGui::BeginTooltip();
      ImGui::PushTextWrapPos(520);
      ImGui::TextUnformatted(compile.recompileReason.c_str());
      ImGui::PopTextWrapPos();
      ImGui::EndTooltip();
    }
    ImGui::Unindent();
  }
  if (open) {
    drawPasses(viewer, compile);
    ImGui::TreePop();
  }
}

} // namespace

void drawNavigationTree(Viewer& viewer) {
  ImGui::TextDisabled("TRACE");
  for (const RunItem& run : viewer.document()->tree().runs) {
    ImGui::PushID(static_cast<int>(run.runId));
    ImGui::SetNextItemOpen(true, ImGuiCond_Appearing);
    if (ImGui::TreeNodeEx("run", ImGuiTreeNodeFlags_SpanAvailWidth, "%s", run.label.c_str())) {
      for (const FrameItem& frame : run.frames) {
        ImGui::SetNextItemOpen(true, ImGuiCond_Appearing);
        if (ImGui::TreeNodeEx(&frame, ImGuiTreeNodeFlags_SpanAvailWidth, "%s",
                              frame.label.c_str())) {
          for (const CompileItem& compile : frame.compiles)
            drawCompile(viewer, compile);
          ImGui::TreePop();
        }
      }
      ImGui::TreePop();
    }
    ImGui::PopID();
  }
}

} // namespace loupe::view
