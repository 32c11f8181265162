// The pass timeline above the canvas: one cell per pass of the compile, its bar as tall as
// its wall time, the current pass outlined; then what the current pass changed.
#include <algorithm>
#include <string>

#include "gui/app/panels.h"
#include "gui/app/theme.h"
#include "gui/app/viewer.h"

namespace loupe::view {

void drawPassTimeline(Viewer& viewer) {
  const CompileItem* compile = viewer.compile();
  if (compile == nullptr || compile->passes.empty()) return;
  const auto& passes = compile->passes;
  double longest = 0.001;
  for (const PassItem& p : passes)
    longest = std::max(longest, p.info.wall_ms);

  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float width = ImGui::GetContentRegionAvail().x, height = 40;
  const float cell = width / static_cast<float>(passes.size());
  ImGui::InvisibleButton("##timeline", {width, height});
  const bool clicked = ImGui::IsItemClicked();
  const float mouseX = ImGui::GetIO().MousePos.x;
  const int hovered = ImGui::IsItemHovered() ? static_cast<int>((mouseX - origin.x) / cell) : -1;
  for (int i = 0; i < static_cast<int>(passes.size()); ++i) {
    const PassInfo& info = passes[i].info;
    const float x0 = origin.x + i * cell + 1, x1 = x0 + cell - 2;
    const float barHeight =
        std::max(2.f, static_cast<float>(info.wall_ms / longest) * (height - 16));
    dl->AddRectFilled({x0, origin.y}, {x1, origin.y + height},
                      imColor(i == hovered ? 0x2a303b : 0x21252d), 2);
    dl->AddRectFilled(
        {x0 + 2, origin.y + height - barHeight}, {x1 - 2, origin.y + height},
        imColor(info.changed ? Palette::timelineChangedBar : Palette::timelineBar, 200), 1);
    dl->PushClipRect({x0, origin.y}, {x1, origin.y + height}, true);
    dl->AddText({x0 + 4, origin.y + 2}, imColor(info.changed ? Palette::text : Palette::dimText),
                info.name.c_str());
    dl->PopClipRect();
    if (i == viewer.passIndex())
      dl->AddRect({x0, origin.y}, {x1, origin.y + height}, imColor(Palette::selectionBorder), 2, 0,
                  2);
  }
  if (hovered >= 0 && hovered < static_cast<int>(passes.size())) {
    const PassInfo& info = passes[hovered].info;
    ImGui::SetTooltip("%s\n%.3f ms, nodes %lld -> %lld, %d decisions", info.name.c_str(),
                      info.wall_ms, static_cast<long long>(info.nodes_before),
                      static_cast<long long>(info.nodes_after), info.decisions);
    if (clicked) viewer.selectPass(hovered);
  }

  const PassItem* pass = viewer.pass();
  if (pass == nullptr) return;
  ImGui::Text("%s", pass->info.name.c_str());
  ImGui::SameLine();
  ImGui::TextDisabled("%.2f ms   %lld \u2192 %lld nodes   %d decisions", pass->info.wall_ms,
                      static_cast<long long>(pass->info.nodes_before),
                      static_cast<long long>(pass->info.nodes_after), pass->info.decisions);
  if (const auto& step = viewer.passStep(); step && step->changed()) {
    ImGui::SameLine();
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(imColor(Palette::timelineChangedBar)),
                       "+%zu added", step->added.size());
    ImGui::SameLine();
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(imColor(0x6f9be0)), "~%zu rewritten",
                       step->rewritten.size());
    ImGui::SameLine();
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(imColor(Palette::error)), "-%zu removed",
                       step->removed.size());
    if (!step->removed.empty() && ImGui::IsItemHovered()) {
      ImGui::BeginTooltip();
      ImGui::TextUnformatted("Removed by this pass:");
      for (const std::string& title : viewer.removedNodes())
        ImGui::BulletText("%s", title.c_str());
      ImGui::EndTooltip();
    }
  }
}

} // namespace loupe::view
