// The selected compile's guards, and why it happened again: on a recompile the guard that
// failed is marked.
#include <algorithm>
#include <string>
#include <vector>

#include "gui/app/panels.h"
#include "gui/app/spinner.h"
#include "gui/app/theme.h"
#include "gui/app/viewer.h"

namespace loupe::view {

void drawGuardsPanel(Viewer& viewer) {
  const CompileItem* compile = viewer.compile();
  if (compile == nullptr) return;
  const CompileDetails* loaded = viewer.document()->details(compile->compileId);
  if (loaded == nullptr) {
    pendingText("reading the guards...");
    return;
  }
  const CompileDetails& details = *loaded;
  const ImVec4 errorColor = ImGui::ColorConvertU32ToFloat4(imColor(Palette::error));
  for (const RecompileRecord& r : details.recompiles) {
    ImGui::TextColored(errorColor, "Recompiled after %s: %s", r.previous_compile_key.c_str(),
                       r.reason.c_str());
    if (r.failed_guard) ImGui::TextColored(errorColor, "failed guard: %s", r.failed_guard->c_str());
  }
  if (details.guards.empty()) {
    ImGui::TextDisabled("No guards recorded for compile %lld (graphs from `loupe run` have none).",
                        static_cast<long long>(compile->compileId));
    return;
  }
  constexpr ImGuiTableFlags kFlags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV |
                                     ImGuiTableFlags_ScrollY | ImGuiTableFlags_Resizable;
  if (!ImGui::BeginTable("##guards", 3, kFlags)) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("", ImGuiTableColumnFlags_WidthFixed, 60);
  ImGui::TableSetupColumn("kind", ImGuiTableColumnFlags_WidthFixed, 170);
  ImGui::TableSetupColumn("guard");
  ImGui::TableHeadersRow();
  // The failed guards first: they are why there is another compile.
  std::vector<const GuardRecord*> guards;
  for (const GuardRecord& guard : details.guards)
    guards.push_back(&guard);
  std::stable_partition(guards.begin(), guards.end(),
                        [](const GuardRecord* g) { return g->failed; });
  for (const GuardRecord* g : guards) {
    const GuardRecord& guard = *g;
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    if (guard.failed) ImGui::TextColored(errorColor, "FAILED");
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(guard.kind.c_str());
    ImGui::TableNextColumn();
    ImGui::PushFont(viewer.fonts().mono);
    ImGui::TextUnformatted(guard.expr.c_str());
    ImGui::PopFont();
    if (ImGui::IsItemHovered() && !guard.user_stack.empty()) {
      ImGui::BeginTooltip();
      for (const StackFrame& frame : guard.user_stack)
        ImGui::Text("%s:%d in %s", frame.file.c_str(), frame.line, frame.function.c_str());
      ImGui::EndTooltip();
    }
  }
  ImGui::EndTable();
}

} // namespace loupe::view
