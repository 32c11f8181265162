// The memory plan of the selected compile: every buffer as a bar over the steps it is live,
// packed into lanes, the step of peak live bytes marked, and the planned peak beside the
// measured one.
#include <algorithm>
#include <string>

#include "gui/app/panels.h"
#include "gui/app/spinner.h"
#include "gui/app/theme.h"
#include "gui/app/viewer.h"

namespace loupe::view {
namespace {

constexpr float kLaneHeight = 18, kAxisHeight = 18;

uint32_t barColor(const BufferRecord& buffer) {
  if (buffer.is_graph_input) return Palette::inputFill;
  if (buffer.is_graph_output) return Palette::returnFill;
  return Palette::timelineBar;
}

void drawSummary(const MemoryTimeline& m) {
  if (!m.laidOutAt.empty()) {
    ImGui::TextUnformatted(m.laidOutAt.c_str());
    ImGui::SameLine(0, 24);
  }
  if (!m.plannedPeakText.empty()) ImGui::Text("planned peak %s", m.plannedPeakText.c_str());
  if (m.measuredPeakBytes) {
    ImGui::SameLine(0, 24);
    ImGui::Text("measured %s", formatBytes(*m.measuredPeakBytes).c_str());
  }
  if (m.arenaBytes) {
    ImGui::SameLine(0, 24);
    ImGui::Text("arena %s", formatBytes(*m.arenaBytes).c_str());
  }
  if (m.peakStep >= 0) {
    ImGui::SameLine(0, 24);
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(imColor(Palette::peakMarker)),
                       "peak at step %lld%s", static_cast<long long>(m.peakStep),
                       m.symbolic ? "" : (" (" + formatBytes(m.peakBytes) + " live)").c_str());
  }
  if (m.symbolic) {
    ImGui::SameLine(0, 24);
    ImGui::TextDisabled("sizes are symbolic: bar lengths are lifetimes, not bytes");
  }
}

} // namespace

void drawMemoryPanel(Viewer& viewer) {
  const CompileItem* compile = viewer.compile();
  if (compile == nullptr) return;
  const CompileDetails* loaded = viewer.document()->details(compile->compileId);
  if (loaded == nullptr) {
    pendingText("reading the memory plan...");
    return;
  }
  const CompileDetails& details = *loaded;
  const MemoryTimeline& m = details.memory;
  if (m.bars.empty()) {
    ImGui::TextDisabled("No memory plan recorded for compile %lld.",
                        static_cast<long long>(compile->compileId));
    return;
  }
  drawSummary(m);

  const float width = ImGui::GetContentRegionAvail().x - 8;
  const float height = kAxisHeight + kLaneHeight * static_cast<float>(m.lanes);
  ImGui::BeginChild("##lanes", {0, 0}, false, ImGuiWindowFlags_HorizontalScrollbar);
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton("##memory", {width, std::max(height, 1.f)});
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float stepWidth = width / static_cast<float>(std::max<int64_t>(m.steps, 1));
  auto xOf = [&](int64_t step) { return origin.x + stepWidth * static_cast<float>(step); };
  for (int64_t step = 0; step < m.steps; step += std::max<int64_t>(1, m.steps / 16))
    dl->AddText({xOf(step) + 2, origin.y}, imColor(Palette::dimText), std::to_string(step).c_str());
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  for (const MemoryBar& bar : m.bars) {
    const BufferRecord& buffer = details.buffers[bar.buffer];
    const ImVec2 a{xOf(bar.firstStep) + 1,
                   origin.y + kAxisHeight + kLaneHeight * static_cast<float>(bar.lane) + 1};
    const ImVec2 b{xOf(bar.lastStep + 1) - 1, a.y + kLaneHeight - 2};
    dl->AddRectFilled(a, b, imColor(barColor(buffer)), 3);
    dl->PushClipRect(a, b, true);
    dl->AddText({a.x + 4, a.y + 1}, imColor(Palette::text),
                (buffer.name + "  " + bar.sizeText).c_str());
    dl->PopClipRect();
    if (ImGui::IsItemHovered() && mouse.x >= a.x && mouse.x <= b.x && mouse.y >= a.y &&
        mouse.y <= b.y)
      ImGui::SetTooltip(
          "%s: %s, live steps %lld..%lld%s", buffer.name.c_str(), bar.sizeText.c_str(),
          static_cast<long long>(bar.firstStep), static_cast<long long>(bar.lastStep),
          bar.offset ? (", arena offset " + std::to_string(*bar.offset)).c_str() : "");
  }
  if (m.peakStep >= 0) {
    const float x = xOf(m.peakStep) + stepWidth / 2;
    dl->AddLine({x, origin.y + kAxisHeight - 4}, {x, origin.y + height},
                imColor(Palette::peakMarker), 2);
    dl->AddText({x + 4, origin.y + height - 16}, imColor(Palette::peakMarker), "peak");
  }
  ImGui::EndChild();
}

} // namespace loupe::view
