// `loupe diff`: compares compiles of one frame (docs/differ.md, "CLI"). It picks the pairs (the
// recompiles of a trace, two selectors, two traces, or one compile around a pass), runs the
// differ on each and renders the ranked findings as text or JSON; or, given the traces of a
// distributed job's ranks, compares the ranks (docs/differ.md, "Ranks"). Exit codes: 0 the
// compiles differ only in shapes, 1 they differ, 2 an error or wrong usage.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <unistd.h>

#include "compiler/ir/error.h"
#include "inspector/diff/compile_diff.h"
#include "inspector/diff/compile_selector.h"
#include "inspector/diff/diff_report.h"
#include "inspector/trace/trace_error.h"
#include "tools/loupe/commands.h"

namespace loupe::cli {

namespace {

using diff::CompileRef;
using diff::DiffReport;

std::string compileList(const TraceReader& trace) {
  std::string text;
  for (const CompileRow& c : trace.compiles())
    text += (text.empty() ? "" : ", ") + diff::describeCompile(trace, c.id);
  return text.empty() ? "none" : text;
}

std::vector<int64_t> select(const TraceReader& trace, const std::string& selector,
                            const char* option) {
  std::vector<int64_t> ids = diff::selectCompiles(trace, selector);
  if (ids.empty())
    throw Error("usage", std::string(option) + " '" + selector + "' matches no compile in " +
                             trace.path() + "; its compiles: " + compileList(trace));
  return ids;
}

bool useColor(const std::string& mode) {
  if (mode == "always") return true;
  if (mode == "never") return false;
  return isatty(STDOUT_FILENO) && std::getenv("NO_COLOR") == nullptr;
}

// A and B selected with the same number of compiles pair up in order (forward with forward,
// backward with backward); otherwise each must select exactly one.
std::vector<DiffReport> diffSelections(const TraceReader& traceA, const TraceReader& traceB,
                                       const DiffOptions& options) {
  std::vector<int64_t> a = select(traceA, options.a, "--a");
  std::vector<int64_t> b = select(traceB, options.b, "--b");
  if (a.size() != b.size())
    throw Error("usage", "--a selects " + std::to_string(a.size()) + " compile(s) and --b " +
                             std::to_string(b.size()) +
                             ": select one each, or as many on both sides (they pair in order); "
                             "compiles: " +
                             compileList(traceA));
  std::vector<DiffReport> reports;
  for (size_t i = 0; i < a.size(); ++i)
    reports.push_back(diff::diffCompiles({&traceA, a[i]}, {&traceB, b[i]}));
  return reports;
}

DiffReport scaling(const TraceReader& trace, const std::vector<int64_t>& ids) {
  std::vector<CompileRef> refs;
  std::string label = "scaling over compiles";
  for (int64_t id : ids) {
    refs.push_back({&trace, id});
    label += " " + std::to_string(id);
  }
  DiffReport report{refs.front(), refs.back(), label, "", false, diff::scalingAnalysis(refs)};
  report.same = !diff::differs(report.findings);
  return report;
}

std::vector<DiffReport> reportsFor(const TraceReader& traceA, const TraceReader& traceB,
                                   bool twoTraces, const DiffOptions& options, bool& several) {
  several = false;
  if (!options.aroundPass.empty()) {
    std::vector<int64_t> ids = select(traceA, options.a, "--a");
    if (ids.size() != 1)
      throw Error("usage", "--around-pass needs --a to select one compile; it selects " +
                               std::to_string(ids.size()) + ": " + compileList(traceA));
    diff::DiffOptions diffOptions{options.aroundPass};
    return {diff::diffCompiles({&traceA, ids[0]}, {&traceA, ids[0]}, diffOptions)};
  }
  if (!twoTraces && options.b.empty() && !options.a.empty()) {
    std::vector<int64_t> ids = select(traceA, options.a, "--a");
    if (options.scaling || ids.size() >= 3) return {scaling(traceA, ids)};
    if (ids.size() == 2) return {diff::diffCompiles({&traceA, ids[0]}, {&traceA, ids[1]})};
    throw Error("usage",
                "--a selects one compile; give --b too (compiles: " + compileList(traceA) + ")");
  }
  if (options.scaling) return {scaling(traceA, select(traceA, options.a, "--a"))};
  if (!twoTraces && options.a.empty() && options.b.empty()) {
    several = true;
    std::vector<DiffReport> reports;
    for (auto [a, b] : diff::recompilePairs(traceA))
      reports.push_back(diff::diffCompiles({&traceA, a}, {&traceA, b}));
    if (reports.empty())
      throw Error("usage", "no frame of " + traceA.path() +
                               " was compiled twice; pick two compiles with --a and --b "
                               "(compiles: " +
                               compileList(traceA) + ")");
    return reports;
  }
  std::vector<DiffReport> reports = diffSelections(traceA, traceB, options);
  several = reports.size() > 1;
  return reports;
}

int render(const std::vector<DiffReport>& reports, bool several, const DiffOptions& options) {
  size_t limit = options.limit.value_or(options.json ? 0 : 10);
  if (options.json) {
    std::cout << (several ? diff::jsonReports(reports, limit) : diff::jsonReport(reports[0], limit))
              << "\n";
  } else {
    diff::TextReportOptions text{limit, useColor(options.color)};
    for (size_t i = 0; i < reports.size(); ++i) {
      if (i) std::cout << "\n";
      diff::printTextReport(reports[i], std::cout, text);
    }
  }
  bool same =
      std::all_of(reports.begin(), reports.end(), [](const DiffReport& r) { return r.same; });
  return same ? 0 : 1;
}

// The trace files named, a folder standing for the .db files in it (in name order).
std::vector<std::string> expandFolders(const std::vector<std::string>& paths) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  for (const std::string& path : paths) {
    if (!fs::is_directory(path)) {
      files.push_back(path);
      continue;
    }
    std::vector<std::string> inFolder;
    for (const fs::directory_entry& entry : fs::directory_iterator(path))
      if (entry.is_regular_file() && entry.path().extension() == ".db")
        inFolder.push_back(entry.path().string());
    if (inFolder.empty()) throw Error("usage", "no trace (.db) in folder " + path);
    std::sort(inFolder.begin(), inFolder.end());
    files.insert(files.end(), inFolder.begin(), inFolder.end());
  }
  return files;
}

// Ranks are compared when asked, when a folder or more than two traces are given, or when two
// traces with nothing selected in them were written by different ranks.
bool comparesRanks(const DiffOptions& options, const std::vector<const TraceReader*>& traces) {
  if (options.ranks || traces.size() > 2) return true;
  if (std::any_of(options.traces.begin(), options.traces.end(),
                  [](const std::string& p) { return std::filesystem::is_directory(p); }))
    return true;
  if (traces.size() != 2 || !options.a.empty() || !options.b.empty() ||
      !options.aroundPass.empty() || options.scaling)
    return false;
  std::vector<diff::RankRun> a = diff::rankRuns({traces[0]}), b = diff::rankRuns({traces[1]});
  return !a.empty() && !b.empty() && diff::rankRuns(traces).size() > std::max(a.size(), b.size());
}

int diffRanks(const std::vector<const TraceReader*>& traces, const DiffOptions& options) {
  if (!options.a.empty() || !options.b.empty() || !options.aroundPass.empty() || options.scaling)
    throw Error("usage", "comparing ranks takes no --a, --b, --around-pass or --scaling");
  std::vector<diff::RankRun> ranks = diff::rankRuns(traces);
  if (ranks.size() < 2) {
    std::string unranked;
    for (const TraceReader* t : traces)
      if (diff::rankRuns({t}).empty()) unranked += (unranked.empty() ? "" : ", ") + t->path();
    throw Error("usage", "comparing ranks needs traces of two ranks or more; found " +
                             std::to_string(ranks.size()) + " rank(s)" +
                             (unranked.empty() ? "" : "; no rank recorded in " + unranked));
  }
  diff::RankReport report = diff::diffRanks(ranks);
  size_t limit = options.limit.value_or(options.json ? 0 : 10);
  if (options.json)
    std::cout << diff::jsonRankReport(report, limit) << "\n";
  else
    diff::printRankReport(report, std::cout, {limit, useColor(options.color)});
  return report.same ? 0 : 1;
}

} // namespace

int runDiff(const DiffOptions& options) {
  try {
    if (options.color != "auto" && options.color != "always" && options.color != "never")
      throw Error("usage", "--color must be auto, always or never, not '" + options.color + "'");
    std::vector<TraceReader> readers;
    for (const std::string& path : expandFolders(options.traces))
      readers.emplace_back(path);
    std::vector<const TraceReader*> traces;
    for (const TraceReader& r : readers)
      traces.push_back(&r);
    if (comparesRanks(options, traces)) return diffRanks(traces, options);
    if (traces.empty()) throw Error("usage", "diff takes one trace or two");
    bool twoTraces = traces.size() == 2;
    bool several = false;
    std::vector<DiffReport> reports =
        reportsFor(*traces[0], *traces.back(), twoTraces, options, several);
    return render(reports, several, options);
  } catch (const Error& e) {
    printError(e.kind() == "usage" ? e.message() : e.what());
  } catch (const TraceError& e) {
    printError(e.what());
  } catch (const std::exception& e) {
    printError(std::string("internal error: ") + e.what());
  }
  return 2;
}

} // namespace loupe::cli
