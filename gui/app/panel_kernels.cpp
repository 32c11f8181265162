// The kernels of the selected compile, slowest first when the trace has their times: a table
// (name, kind, target, time, share of a call and of the device's peak when profiled, fused nodes,
// reason, check-mode error), sortable by name, time and peak share, under a line saying where a
// profiled call's time goes; and, for the selected row, the rejected alternatives and the
// generated source with syntax colouring. gui/viewmodel/kernel_table.h gives the text and order.
#include <algorithm>
#include <string>
#include <string_view>
#include <utility>

#include "gui/app/panels.h"
#include "gui/app/spinner.h"
#include "gui/app/theme.h"
#include "gui/app/viewer.h"
#include "gui/viewmodel/kernel_table.h"
#include "gui/viewmodel/source_highlight.h"

namespace loupe::view {
namespace {

uint32_t colorOf(TokenKind kind) {
  switch (kind) {
  case TokenKind::Keyword:
    return Palette::codeKeyword;
  case TokenKind::Type:
    return Palette::codeType;
  case TokenKind::Number:
    return Palette::codeNumber;
  case TokenKind::Comment:
    return Palette::codeComment;
  case TokenKind::String:
    return Palette::codeString;
  case TokenKind::Preprocessor:
    return Palette::codePreprocessor;
  case TokenKind::Other:
    break;
  }
  return Palette::text;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names)
    out += (out.empty() ? "" : ", ") + name;
  return out;
}

// source is coloured by spans (computed once, when the compile's details were read).
void drawSource(const Fonts& fonts, std::string_view source, const std::vector<SourceSpan>& spans) {
  ImGui::PushFont(fonts.mono);
  bool lineStarted = false;
  for (const SourceSpan& span : spans) {
    ImGui::PushStyleColor(ImGuiCol_Text, imColor(colorOf(span.kind)));
    const std::string_view text =
        std::string_view(source).substr(span.begin, span.end - span.begin);
    for (size_t start = 0; start <= text.size();) {
      const size_t newline = std::min(text.find('\n', start), text.size());
      if (newline > start) {
        if (lineStarted) ImGui::SameLine(0, 0);
        ImGui::TextUnformatted(text.data() + start, text.data() + newline);
        lineStarted = true;
      }
      if (newline == text.size()) break;
      if (!lineStarted) ImGui::TextUnformatted("");
      lineStarted = false;
      start = newline + 1;
    }
    ImGui::PopStyleColor();
  }
  ImGui::PopFont();
}

// Until a row is clicked: the selected node's kernel, else the first with generated source.
int defaultKernel(Viewer& viewer, const std::vector<KernelRecord>& kernels) {
  const GraphCanvas& canvas = viewer.canvas();
  const std::string node = canvas.model() != nullptr && canvas.selected() >= 0
                               ? canvas.model()->boxes()[canvas.selected()].kernel
                               : "";
  int firstWithSource = -1;
  for (int i = static_cast<int>(kernels.size()) - 1; i >= 0; --i) {
    if (!node.empty() && kernels[i].name == node) return i;
    if (!kernels[i].source.empty()) firstWithSource = i;
  }
  return std::max(firstWithSource, 0);
}

// The sort the table's header asks for: a sortable column's user id is its KernelSortKey.
std::vector<int> rowOrder(const CompileDetails& details) {
  KernelSortKey key = KernelSortKey::Time;
  bool descending = true;
  if (const ImGuiTableSortSpecs* specs = ImGui::TableGetSortSpecs();
      specs != nullptr && specs->SpecsCount > 0) {
    key = static_cast<KernelSortKey>(specs->Specs[0].ColumnUserID);
    descending = specs->Specs[0].SortDirection == ImGuiSortDirection_Descending;
  }
  return sortedKernels(details, key, descending);
}

void drawTable(Viewer& viewer, const CompileDetails& details, int shown) {
  const std::vector<KernelRecord>& kernels = details.kernels;
  constexpr ImGuiTableFlags kFlags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV |
                                     ImGuiTableFlags_ScrollY | ImGuiTableFlags_Resizable |
                                     ImGuiTableFlags_Sortable;
  if (!ImGui::BeginTable("##kernels", 9, kFlags)) return;
  constexpr ImGuiTableColumnFlags kFixed = ImGuiTableColumnFlags_WidthFixed;
  constexpr ImGuiTableColumnFlags kUnsorted = ImGuiTableColumnFlags_NoSort;
  auto key = [](KernelSortKey k) { return static_cast<ImGuiID>(k); };
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("name", kFixed, 60, key(KernelSortKey::Name));
  ImGui::TableSetupColumn("kind", kFixed | kUnsorted, 74);
  ImGui::TableSetupColumn("target", kFixed | kUnsorted, 48);
  ImGui::TableSetupColumn(details.profiled ? "ms/call" : "ms (calls)",
                          kFixed | ImGuiTableColumnFlags_DefaultSort |
                              ImGuiTableColumnFlags_PreferSortDescending,
                          96, key(KernelSortKey::Time));
  ImGui::TableSetupColumn("share", kFixed | ImGuiTableColumnFlags_PreferSortDescending, 52,
                          key(KernelSortKey::Time));
  ImGui::TableSetupColumn("of peak", kFixed | ImGuiTableColumnFlags_PreferSortDescending, 96,
                          key(KernelSortKey::PeakShare));
  ImGui::TableSetupColumn("fused nodes", ImGuiTableColumnFlags_WidthStretch | kUnsorted, 1);
  ImGui::TableSetupColumn("reason", ImGuiTableColumnFlags_WidthStretch | kUnsorted, 2);
  ImGui::TableSetupColumn("max error", kFixed | kUnsorted, 72);
  ImGui::TableHeadersRow();
  for (int i : rowOrder(details)) {
    const KernelRecord& k = kernels[i];
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    if (ImGui::Selectable(k.name.c_str(), shown == i, ImGuiSelectableFlags_SpanAllColumns))
      viewer.selectedKernel = i;
    const KernelTimeText times = kernelTimeText(details, k);
    const std::string fused = joined(k.fused_nodes);
    for (const std::string* text :
         {&k.kind, &k.target, &times.time, &times.share, &times.peak, &fused, &k.reason}) {
      ImGui::TableNextColumn();
      if (*text == "-")
        ImGui::TextDisabled("-");
      else
        ImGui::TextUnformatted(text->c_str());
    }
    ImGui::TableNextColumn();
    if (k.max_error)
      ImGui::Text("%.2e", *k.max_error);
    else
      ImGui::TextDisabled("-");
  }
  ImGui::EndTable();
}

} // namespace

void drawKernelsPanel(Viewer& viewer) {
  const CompileItem* compile = viewer.compile();
  if (compile == nullptr) return;
  const CompileDetails* details = viewer.document()->details(compile->compileId);
  if (details == nullptr) {
    pendingText("reading the compile's kernels...");
    return;
  }
  const auto& kernels = details->kernels;
  if (kernels.empty()) {
    ImGui::TextDisabled("No kernels: compile %lld stopped before kernel selection.",
                        static_cast<long long>(compile->compileId));
    return;
  }
  if (viewer.selectedKernel >= static_cast<int>(kernels.size())) viewer.selectedKernel = -1;
  const int shown =
      viewer.selectedKernel >= 0 ? viewer.selectedKernel : defaultKernel(viewer, kernels);
  const float width = ImGui::GetContentRegionAvail().x;
  ImGui::BeginChild("##table", {width * 0.55f, 0});
  if (details->profiled)
    ImGui::Text("profiled: %.4g ms per call: %s", details->profiledCallMs,
                details->whereTimeGoes.c_str());
  if (!details->cudaGraphs.empty()) ImGui::TextWrapped("%s", details->cudaGraphs.c_str());
  drawTable(viewer, *details, shown);
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("##detail", {0, 0});
  const KernelRecord& k = kernels[shown];
  ImGui::Text("%s  %s on %s", k.name.c_str(), k.kind.c_str(), k.target.c_str());
  for (const KernelAlternative& alt : k.alternatives)
    ImGui::TextDisabled("rejected %s (%s): %s", alt.kind.c_str(), alt.target.c_str(),
                        alt.why.c_str());
  ImGui::Separator();
  if (k.source.empty()) {
    ImGui::TextDisabled("No generated source (%s kernel).", k.kind.c_str());
  } else {
    // Generated kernels start with the same guarded prelude; their own code is what a reader
    // wants first.
    const HighlightedKernel& coloured = details->kernelSources[shown];
    const std::string_view source = k.source;
    drawSource(viewer.fonts(), source.substr(coloured.bodyStart), coloured.body);
    if (coloured.preludeEnd > 0 && ImGui::TreeNode("the prelude every generated kernel shares")) {
      drawSource(viewer.fonts(), source.substr(0, coloured.preludeEnd), coloured.prelude);
      ImGui::TreePop();
    }
  }
  ImGui::EndChild();
}

} // namespace loupe::view
