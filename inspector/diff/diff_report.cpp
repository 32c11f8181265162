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

// The numbered findings, at most `limit`, and how many more there are.
void printFindings(const std::vector<const Finding*>& findings, std::ostream& os,
                   const TextReportOptions& options) {
  Style style(options.color);
  size_t count = shown(findings.size(), options.limit);
  for (size_t i = 0; i < count; ++i) {
    const Finding& f = *findings[i];
    os << (i + 1) << ". " << style.kind << f.kind << style.reset;
    if (f.source) os << "  " << style.source << sourceText(*f.source) << style.reset;
    if (!f.pass.empty()) os << "  " << style.dim << "[" << f.pass << "]" << style.reset;
    os << "\n   " << f.message << "\n";
  }
  if (count < findings.size())
    os << style.dim << "(" << findings.size() - count << " more findings; --limit 0 shows all)"
       << style.reset << "\n";
}

} // namespace

void printTextReport(const DiffReport& report, std::ostream& os, const TextReportOptions& options) {
  Style style(options.color);
  os << "A: " << report.labelA << "\n";
  if (!report.labelB.empty()) os << "B: " << report.labelB << "\n";
  if (report.same)
    os << style.good << "no differences beyond shapes" << style.reset
       << (report.findings.empty() ? "" : "; why it recompiled:") << "\n";
  std::vector<const Finding*> findings;
  for (const Finding& f : report.findings)
    findings.push_back(&f);
  printFindings(findings, os, options);
}

void printRankReport(const RankReport& report, std::ostream& os, const TextReportOptions& options) {
  Style style(options.color);
  for (const RankRun& r : report.ranks) {
    os << "rank " << r.rank;
    if (r.worldSize) os << " of " << *r.worldSize;
    if (r.backend) os << " (" << *r.backend << ")";
    os << ": " << r.trace->path() << ", run " << r.runId << "\n";
  }
  if (report.same)
    os << style.good << "the ranks compiled the same graphs up to shapes" << style.reset
       << (report.findings.empty() ? "" : "; notes:") << "\n";
  std::vector<const Finding*> findings;
  for (const RankFinding& f : report.findings)
    findings.push_back(&f.finding);
  printFindings(findings, os, options);
}

std::string jsonRankReport(const RankReport& report, size_t limit) {
  Json j;
  j["ranks"] = Json::array();
  for (const RankRun& r : report.ranks)
    j["ranks"].push_back({{"rank", r.rank},
                          {"world_size", r.worldSize ? Json(*r.worldSize) : Json(nullptr)},
                          {"backend", r.backend ? Json(*r.backend) : Json(nullptr)},
                          {"trace", r.trace->path()},
                          {"run", r.runId}});
  j["same"] = report.same;
  j["findings"] = Json::array();
  for (size_t i = 0; i < shown(report.findings.size(), limit); ++i) {
    const RankFinding& f = report.findings[i];
    Json finding = findingJson(f.finding);
    finding["ranks"] = f.ranks;
    finding["frame"] = f.frame;
    finding["compile_id"] = f.compileId;
    finding["graph_kind"] = f.graphKind;
    j["findings"].push_back(std::move(finding));
  }
  return j.dump(2);
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
