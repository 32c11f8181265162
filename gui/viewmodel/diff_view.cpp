#include "gui/viewmodel/diff_view.h"

#include "compiler/ir/error.h"
#include "inspector/trace/content_hash.h"

namespace loupe::view {
namespace {

// The last pass both compiles left a graph after, so the two canvases show like for like.
std::string lastCommonPass(const TraceReader& trace, int64_t a, int64_t b) {
  const std::vector<PassRow> passesA = trace.passes(a), passesB = trace.passes(b);
  for (auto it = passesA.rbegin(); it != passesA.rend(); ++it) {
    if (!it->snapshot_id) continue;
    for (const PassRow& other : passesB)
      if (other.info.name == it->info.name && other.snapshot_id) return it->info.name;
  }
  throw Error("diff", "compiles " + std::to_string(a) + " and " + std::to_string(b) + " of " +
                          trace.path() + " have no pass that recorded a graph in both");
}

struct Side {
  std::shared_ptr<const GraphModel> model;
  std::string hash;
};

Side sideAfter(const TraceReader& trace, int64_t compile, const std::string& pass) {
  const SnapshotRecord snapshot = trace.snapshotAfterPass(compile, pass);
  return {GraphModel::fromText(snapshot.lir, trace.path() + " compile " + std::to_string(compile) +
                                                 " after " + pass),
          contentHash(snapshot.lir)};
}

std::vector<DiffStatus> statuses(const GraphModel& self, const GraphModel& other,
                                 const std::vector<int>& toOther) {
  std::vector<DiffStatus> out;
  for (size_t i = 0; i < self.boxes().size(); ++i) {
    const int match = toOther[i];
    if (match < 0)
      out.push_back(DiffStatus::Unmatched);
    else
      out.push_back(boxRewritten(self.boxes()[i], other.boxes()[static_cast<size_t>(match)], false)
                        ? DiffStatus::Changed
                        : DiffStatus::Matched);
  }
  return out;
}

int boxAtLine(const GraphModel& model, const diff::FindingSource& source) {
  for (size_t i = 0; i < model.boxes().size(); ++i) {
    const SourceLoc& loc = model.boxes()[i].loc;
    if (loc.line == source.line && (source.file.empty() || loc.file == source.file))
      return static_cast<int>(i);
  }
  return -1;
}

} // namespace

FindingFocus locateFinding(const diff::Finding& finding, const GraphModel& a, const GraphModel& b,
                           const BoxMatch& match) {
  FindingFocus focus;
  for (const diff::FindingNode& node : finding.nodes) {
    focus.boxA = node.nameA.empty() ? -1 : a.findByName(node.nameA);
    focus.boxB = node.nameB.empty() ? -1 : b.findByName(node.nameB);
    if (focus.boxA >= 0 || focus.boxB >= 0) break;
  }
  if (focus.boxA < 0 && focus.boxB < 0 && finding.source) {
    focus.boxA = boxAtLine(a, *finding.source);
    focus.boxB = boxAtLine(b, *finding.source);
  }
  if (focus.boxB < 0 && focus.boxA >= 0) focus.boxB = match.aToB[static_cast<size_t>(focus.boxA)];
  if (focus.boxA < 0 && focus.boxB >= 0) focus.boxA = match.bToA[static_cast<size_t>(focus.boxB)];
  return focus;
}

DiffView buildDiffView(const TraceReader& trace, int64_t compileA, int64_t compileB,
                       const std::string& pass) {
  DiffView view;
  view.report = diff::diffCompiles({&trace, compileA}, {&trace, compileB});
  view.pass = pass.empty() ? lastCommonPass(trace, compileA, compileB) : pass;
  Side a = sideAfter(trace, compileA, view.pass), b = sideAfter(trace, compileB, view.pass);
  view.a = std::move(a.model);
  view.b = std::move(b.model);
  view.hashA = std::move(a.hash);
  view.hashB = std::move(b.hash);
  view.match = matchBoxes(*view.a, *view.b);
  view.statusA = statuses(*view.a, *view.b, view.match.aToB);
  view.statusB = statuses(*view.b, *view.a, view.match.bToA);
  for (const diff::Finding& finding : view.report.findings)
    view.focus.push_back(locateFinding(finding, *view.a, *view.b, view.match));
  return view;
}

} // namespace loupe::view
