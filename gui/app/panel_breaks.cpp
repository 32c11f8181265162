// Graph breaks of every run: where Dynamo split the program and why, with the user's stack;
// "go to compile" selects the compile of the graph before the break.
#include <algorithm>
#include <string>

#include "gui/app/panels.h"
#include "gui/app/spinner.h"
#include "gui/app/theme.h"
#include "gui/app/viewer.h"

namespace loupe::view {

void drawBreaksPanel(Viewer& viewer) {
  int shown = 0;
  bool pending = false;
  for (const RunItem& run : viewer.document()->tree().runs) {
    const std::vector<GraphBreakRecord>* loaded = viewer.document()->graphBreaks(run.runId);
    if (loaded == nullptr) {
      pending = true;
      continue;
    }
    const auto& breaks = *loaded;
    for (size_t i = 0; i < breaks.size(); ++i, ++shown) {
      const GraphBreakRecord& gb = breaks[i];
      ImGui::PushID(shown);
      // Dynamo's reasons run to several paragraphs: the first line heads the entry.
      const size_t firstLineEnd = std::min(gb.reason.find('\n'), gb.reason.size());
      const std::string headline = gb.reason.substr(0, firstLineEnd);
      if (gb.compile_id) {
        if (ImGui::SmallButton("go to compile")) viewer.selectCompile(*gb.compile_id);
        ImGui::SameLine();
      }
      if (shown == 0) ImGui::SetNextItemOpen(true, ImGuiCond_Appearing);
      const bool open = ImGui::TreeNodeEx("break", ImGuiTreeNodeFlags_SpanAvailWidth,
                                          "run %lld  %s: %s", static_cast<long long>(run.runId),
                                          gb.frame_name.c_str(), headline.c_str());
      if (open) {
        if (firstLineEnd < gb.reason.size())
          ImGui::TextWrapped("%s", gb.reason.c_str() + firstLineEnd + 1);
        ImGui::PushFont(viewer.fonts().mono);
        for (const StackFrame& frame : gb.user_stack) {
          ImGui::Text("%s:%d in %s", frame.file.c_str(), frame.line, frame.function.c_str());
          if (!frame.code.empty())
            ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(imColor(Palette::searchMatch)),
                               "    %s", frame.code.c_str());
        }
        ImGui::PopFont();
        ImGui::TreePop();
      }
      ImGui::PopID();
    }
  }
  if (pending)
    pendingText("reading the graph breaks...");
  else if (shown == 0)
    ImGui::TextDisabled("No graph breaks: every frame was captured whole.");
}

} // namespace loupe::view
