#include "inspector/diff/diff_report.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace loupe::diff {

namespace {

using Json = nlohmann::ordered_json;

// ANSI styles; empty strings when colour is off, so the text is the same either way.
struct Style {
  explicit Style(bool on)
      : kind(on ? "\033[1;31m" : ""), source(on ? "\033[36m" : ""), dim(on ? "\033[2m" : ""),
        good(on ? "\033[32m" : ""), reset(on ? "\033[0m" : "") {}
  const char *kind, *source, *dim, *good, *reset;
};

std::string sourceText(const FindingSource& source) {
  return source.file + ":" + std::to_string(source.line) +
         (source.modulePath.empty() ? "" : " (" + source.modulePath + ")");
}

size_t shown(size_t total, size_t limit) {
  return limit == 0 ? total : std::min(total, limit);
}

Json compileJson(const CompileRef& ref, const std::string& label) {
  Json j;
  j["trace"] = ref.trace ? ref.trace->path() : "";
  j["compile"] = ref.compileId;
  if (ref.trace) {
    CompileRow row = ref.trace->compile(ref.compileId);
    j["compile_key"] = row.info.compile_key;
    j["graph_kind"] = row.info.graph_kind;
  }
  j["label"] = label;
  return j;
}

Json findingJson(const Finding& f) {
  Json j;
  j["kind"] = f.kind;
  j["severity"] = severityName(f.severity);
  j["score"] = f.score;
  j["pass"] = f.pass;
  j["nodes"] = Json::array();
  for (const FindingNode& n : f.nodes)
    j["nodes"].push_back({{"op", n.op},
                          {"a", n.nameA},
                          {"b", n.nameB},
                          {"shape_a", n.shapeA},
                          {"shape_b", n.shapeB}});
  if (f.source)
    j["source"] = {
        {"file", f.source->file}, {"line", f.source->line}, {"module", f.source->modulePath}};
  else
    j["source"] = nullptr;
  j["message"] = f.message;
  return j;
}

Json reportJson(const DiffReport& report, size_t limit) {
  Json j;
  j["a"] = compileJson(report.a, report.labelA);
  j["b"] = compileJson(report.b, report.labelB);
  j["same"] = report.same;
  j["findings"] = Json::array();
  for (size_t i = 0; i < shown(report.findings.size(), limit); ++i)
    j["findings"].push_back(findingJson(report.findings[i]));
  return j;
}

} // namespace

void printTextReport(const DiffReport& report, std::ostream& os, const TextReportOptions& options) {
  Style style(options.color);
  os << "A: " << report.labelA << "\n";
  if (!report.labelB.empty()) os << "B: " << report.labelB << "\n";
  if (report.same)
    os << style.good << "no differences beyond shapes" << style.reset
       << (report.findings.empty() ? "" : "; why it recompiled:") << "\n";
  size_t count = shown(report.findings.size(), options.limit);
  for (size_t i = 0; i < count; ++i) {
    const Finding& f = report.findings[i];
    os << (i + 1) << ". " << style.kind << f.kind << style.reset;
    if (f.source) os << "  " << style.source << sourceText(*f.source) << style.reset;
    if (!f.pass.empty()) os << "  " << style.dim << "[" << f.pass << "]" << style.reset;
    os << "\n   " << f.message << "\n";
  }
  if (count < report.findings.size())
    os << style.dim << "(" << report.findings.size() - count
       << " more findings; --limit 0 shows all)" << style.reset << "\n";
}

std::string jsonReport(const DiffReport& report, size_t limit) {
  return reportJson(report, limit).dump(2);
}

std::string jsonReports(const std::vector<DiffReport>& reports, size_t limit) {
  Json j;
  j["same"] =
      std::all_of(reports.begin(), reports.end(), [](const DiffReport& r) { return r.same; });
  j["diffs"] = Json::array();
  for (const DiffReport& r : reports)
    j["diffs"].push_back(reportJson(r, limit));
  return j.dump(2);
}

} // namespace loupe::diff
