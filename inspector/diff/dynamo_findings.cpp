// What Dynamo recorded around the two compiles: a graph break in one compile only
// (graph_break), the guard whose failure made B a new compile (failed_guard), with the
// user line that set it, and the condition after which the two traced different lines
// (diverged_branch).
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "inspector/diff/detectors.h"
#include "inspector/diff/traced_path.h"

namespace loupe::diff {

namespace {

std::map<std::string, GraphBreakRecord> breaksOf(const LoadedCompile& compile) {
  std::map<std::string, GraphBreakRecord> breaks;
  for (GraphBreakRecord& gb : compile.ref.trace->graphBreaks(compile.row.run_id)) {
    if (gb.compile_id != compile.ref.compileId) continue;
    std::string key = gb.reason + where(sourceOf(gb.user_stack));
    breaks.emplace(std::move(key), std::move(gb));
  }
  return breaks;
}

// The lines the compile traced. A backward graph has none of its own: Dynamo traced the frame
// once, for its forward, the latest earlier compile of the same run and compile key (keys
// start again after torch._dynamo.reset()).
std::vector<TracedLine> tracedLinesOf(const LoadedCompile& compile) {
  const TraceReader& trace = *compile.ref.trace;
  std::vector<TracedLine> lines = trace.tracedLines(compile.ref.compileId);
  if (!lines.empty() || compile.row.info.compile_key.empty()) return lines;
  std::optional<int64_t> forward;
  for (const CompileRow& other : trace.compiles(compile.row.run_id))
    if (other.id < compile.ref.compileId && other.info.compile_key == compile.row.info.compile_key)
      forward = other.id;
  return forward ? trace.tracedLines(*forward) : lines;
}

// Whether a graph break recorded in `mine` and not in `theirs` is at this line: the graph_break
// finding then names the line itself.
bool breaksOnlyAt(const std::map<std::string, GraphBreakRecord>& mine,
                  const std::map<std::string, GraphBreakRecord>& theirs, const TracedLine& line) {
  return std::any_of(mine.begin(), mine.end(), [&](const auto& entry) {
    auto source = sourceOf(entry.second.user_stack);
    return !theirs.count(entry.first) && source && source->file == line.file &&
           source->line == line.line;
  });
}

} // namespace

void detectDivergedBranch(const DiffInputs& in, std::vector<Finding>& findings) {
  std::optional<PathParting> parting = partingOf(tracedLinesOf(in.a), tracedLinesOf(in.b));
  if (!parting) return;
  const TracedLine& condition = parting->condition;
  auto wentOn = [&](const std::optional<TracedLine>& next) {
    return next ? "went on to " + describeLine(*next, condition) : std::string("stopped there");
  };
  // A branch that leads to a graph break in one compile only is the route to that break: the
  // graph_break finding, which names the break, ranks above.
  auto breaksA = breaksOf(in.a), breaksB = breaksOf(in.b);
  bool toGraphBreak = (parting->nextA && breaksOnlyAt(breaksA, breaksB, *parting->nextA)) ||
                      (parting->nextB && breaksOnlyAt(breaksB, breaksA, *parting->nextB));
  FindingSource source{.file = condition.file, .line = condition.line};
  findings.push_back(makeFinding(FindingKind::DivergedBranch, "", {}, source,
                                 "A and B traced different code after " +
                                     describeLine(condition, condition) + ": A " +
                                     wentOn(parting->nextA) + ", B " + wentOn(parting->nextB),
                                 0, toGraphBreak ? Evidence::Weak : Evidence::Strong));
}

void detectGraphBreaks(const DiffInputs& in, std::vector<Finding>& findings) {
  auto breaksA = breaksOf(in.a), breaksB = breaksOf(in.b);
  auto addOnly = [&](const auto& mine, const auto& theirs, const char* side) {
    for (const auto& [key, gb] : mine)
      if (!theirs.count(key)) {
        // Dynamo's reasons run to several lines of hints; the first says what broke.
        std::string reason = gb.reason.substr(0, gb.reason.find('\n'));
        findings.push_back(makeFinding(FindingKind::GraphBreak, "", {}, sourceOf(gb.user_stack),
                                       std::string("graph break only in ") + side + ": " + reason +
                                           where(sourceOf(gb.user_stack))));
      }
  };
  addOnly(breaksA, breaksB, "A");
  addOnly(breaksB, breaksA, "B");
}

void detectFailedGuards(const DiffInputs& in, std::vector<Finding>& findings) {
  const LoadedCompile& A = in.a;
  const LoadedCompile& B = in.b;
  std::vector<GuardRecord> guardsA = A.ref.trace->guards(A.ref.compileId);
  auto add = [&](const std::string& expr, const std::string& reason) {
    // The recompile record names the guard as "KIND: expr" when the capture identified it.
    auto guard = std::find_if(guardsA.begin(), guardsA.end(), [&](const GuardRecord& g) {
      return g.expr == expr || g.kind + ": " + g.expr == expr;
    });
    // A tensor's size check failing is the ordinary recompile on a new input shape: the line
    // Dynamo attributes it to (the first use of the tensor) explains nothing, so it is left
    // out, and the finding is weak evidence. A guard that a line of the program added ranks
    // high, with that line.
    bool sizeCheck = expr.starts_with("TENSOR_MATCH") ||
                     (guard != guardsA.end() && guard->kind == "TENSOR_MATCH");
    auto source = guard == guardsA.end() || sizeCheck ? std::nullopt : sourceOf(guard->user_stack);
    findings.push_back(makeFinding(FindingKind::FailedGuard, "", {}, source,
                                   "B recompiled because guard `" + expr + "`" +
                                       (guard == guardsA.end() ? "" : " (" + guard->kind + ")") +
                                       " failed" +
                                       (reason.empty() || reason == expr ? "" : ": " + reason) +
                                       (source ? ", set by the line" + where(source) : ""),
                                   0, source ? Evidence::Strong : Evidence::Weak));
  };
  std::vector<RecompileRecord> recompiles = B.ref.trace->recompiles(B.ref.compileId);
  // B was checked against every cached entry of its frame; the rejection by A is the one that
  // explains the pair, when it was recorded.
  const std::string& keyA = A.row.info.compile_key;
  if (std::any_of(recompiles.begin(), recompiles.end(),
                  [&](const RecompileRecord& r) { return r.previous_compile_key == keyA; }))
    std::erase_if(recompiles,
                  [&](const RecompileRecord& r) { return r.previous_compile_key != keyA; });
  for (const RecompileRecord& r : recompiles)
    add(r.failed_guard.value_or(r.reason), r.reason);
  if (!recompiles.empty()) return;
  for (const GuardRecord& g : guardsA)
    if (g.failed) add(g.expr, "");
}

} // namespace loupe::diff
