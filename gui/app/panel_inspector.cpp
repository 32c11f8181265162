// The node inspector: everything known about the selected box, from the snapshot (op,
// attributes, operand and result types, source location and the user's line) and from the
// compile (the kernel that runs it and why, its buffer and lifetime, the decisions that named
// it and the rule behind each).
#include <algorithm>
#include <string>

#include "gui/app/panels.h"
#include "gui/app/theme.h"
#include "gui/app/viewer.h"
#include "gui/viewmodel/node_decisions.h"

namespace loupe::view {
namespace {

void heading(const char* text) {
  ImGui::Dummy({0, 4});
  ImGui::TextDisabled("%s", text);
  ImGui::Separator();
}

void row(const char* key, const std::string& value) {
  ImGui::TextDisabled("%s", key);
  ImGui::SameLine(96);
  ImGui::TextWrapped("%s", value.c_str());
}

void drawKernel(const KernelRecord& kernel) {
  heading("KERNEL");
  row("name", kernel.name);
  row("kind", kernel.kind + " on " + kernel.target);
  row("why", kernel.reason);
  if (kernel.max_error) row("max error", std::to_string(*kernel.max_error));
  for (const KernelAlternative& alt : kernel.alternatives) {
    ImGui::BulletText("rejected %s (%s)", alt.kind.c_str(), alt.target.c_str());
    ImGui::Indent();
    ImGui::TextWrapped("%s", alt.why.c_str());
    ImGui::Unindent();
  }
}

void drawBuffer(const BufferRecord& buffer) {
  heading("BUFFER");
  row("buffer", buffer.name);
  row("size",
      buffer.size_expr ? *buffer.size_expr + " B" : std::to_string(buffer.size_bytes) + " B");
  row("offset", buffer.offset ? std::to_string(*buffer.offset) : "outside the arena");
  row("lifetime",
      "steps " + std::to_string(buffer.first_use) + " .. " + std::to_string(buffer.last_use));
  if (buffer.is_graph_input || buffer.is_graph_output)
    row("role", buffer.is_graph_input ? "graph input" : "graph output");
}

void drawDecisions(const std::vector<NodeDecision>& decisions) {
  if (decisions.empty()) return;
  heading("DECISIONS");
  for (const NodeDecision& d : decisions) {
    ImGui::BulletText("#%d [%s] %s%s", d.decision->ordinal, d.pass.c_str(),
                      d.decision->kind.c_str(), d.decision->applied ? "" : " (skipped)");
    ImGui::Indent();
    ImGui::TextWrapped("%s", d.decision->description.c_str());
    if (!d.rule.empty()) row("rule", d.rule);
    ImGui::Unindent();
  }
}

} // namespace

void drawNodeInspector(Viewer& viewer) {
  ImGui::TextDisabled("NODE");
  const Inspected inspected = viewer.inspected();
  GraphCanvas& canvas = *inspected.canvas;
  if (canvas.model() == nullptr || canvas.selected() < 0) {
    ImGui::TextWrapped("Click a node to inspect it.");
    return;
  }
  const Box& box = canvas.model()->boxes()[canvas.selected()];
  ImGui::PushFont(viewer.fonts().mono);
  ImGui::TextWrapped("%s", box.title().c_str());
  ImGui::PopFont();
  if (!box.op.empty()) row("op", box.op);
  row("results", box.resultTypes);
  if (!box.attributes.empty()) {
    heading("ATTRIBUTES");
    for (const auto& [name, value] : box.attributes)
      row(name.c_str(), value);
  }
  if (!box.operands.empty()) {
    heading("OPERANDS");
    for (const std::string& operand : box.operands)
      ImGui::BulletText("%s", operand.c_str());
  }
  if (box.loc.known()) {
    heading("SOURCE");
    if (!box.loc.file.empty()) row("at", box.loc.file + ":" + std::to_string(box.loc.line));
    if (!box.loc.module_path.empty()) row("module", box.loc.module_path);
    if (auto line = viewer.sourceLines().line(box.loc.file, box.loc.line)) {
      ImGui::PushFont(viewer.fonts().mono);
      ImGui::PushStyleColor(ImGuiCol_Text, imColor(Palette::searchMatch));
      const size_t indent = std::min(line->find_first_not_of(" \t"), line->size());
      ImGui::TextWrapped("%d | %s", box.loc.line, line->c_str() + indent);
      ImGui::PopStyleColor();
      ImGui::PopFont();
    }
  }
  if (inspected.compileId < 0) return;
  const CompileDetails* loaded = viewer.document()->details(inspected.compileId);
  if (loaded == nullptr) return; // the kernels panel shows that it is loading
  const CompileDetails& details = *loaded;
  if (!box.kernel.empty()) {
    auto kernel = std::find_if(details.kernels.begin(), details.kernels.end(),
                               [&](const KernelRecord& k) { return k.name == box.kernel; });
    if (kernel != details.kernels.end()) drawKernel(*kernel);
  }
  auto buffer = std::find_if(details.buffers.begin(), details.buffers.end(),
                             [&](const BufferRecord& b) { return b.name == box.name; });
  if (buffer != details.buffers.end()) drawBuffer(*buffer);
  if (const CompileItem* compile = viewer.document()->tree().findCompile(inspected.compileId))
    drawDecisions(decisionsAbout(details.decisions, compile->passes, box.name));
}

} // namespace loupe::view
