// diffRanks: lines up the ranks' compiles by slot (frame, Dynamo's compile id within the
// frame, graph kind) and reports, per slot, the ranks that compiled it when others did not
// (rank_only_compile), that compiled it for another reason (rank_recompile_diff), that traced
// another graph (rank_graph_diff, with diffCompiles' first divergent node and user line), or
// that compiled the same graph at other input shapes (rank_input_shapes, a note).
#include "inspector/diff/rank_diff.h"

#include <algorithm>
#include <map>

#include "inspector/diff/compile_diff.h"
#include "inspector/diff/compile_selector.h"
#include "inspector/diff/finding_builder.h"

namespace loupe::diff {

namespace {

// Where a compile sits in its rank's program, the same on every rank that ran the same code:
// Dynamo numbers frames in the order it first sees them, so the frame is named by its function
// and line rather than its number; the compile id within the frame counts its recompiles.
struct Slot {
  std::string frame, compileId, graphKind;
  auto operator<=>(const Slot&) const = default;
};

Slot slotOf(const CompileRow& c) {
  const std::string& key = c.info.compile_key;
  size_t slash = key.find('/');
  std::string frame = c.info.frame_name.empty() ? "frame " + key.substr(0, slash)
                                                : c.info.frame_name + " (" + c.info.frame_file +
                                                      ":" + std::to_string(c.info.frame_line) + ")";
  std::string compileId = slash == std::string::npos ? key : key.substr(slash + 1);
  return {frame, compileId, c.info.graph_kind};
}

std::string slotText(const Slot& slot) {
  return "compile " + slot.compileId + " " + slot.graphKind + " of " + slot.frame;
}

std::string rankList(const std::vector<int64_t>& ranks) {
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i)
    text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text;
}

// Why a compile was made again (its recompile record: the failed guard), and the user line
// that set that guard when it is not a tensor's plain size check. Empty for a first compile.
struct Cause {
  std::string text;
  std::optional<FindingSource> source;
};

Cause causeOf(const TraceReader& trace, const CompileRow& c) {
  std::vector<RecompileRecord> recompiles = trace.recompiles(c.id);
  if (recompiles.empty()) return {};
  const RecompileRecord& r = recompiles.front();
  std::string guard = r.failed_guard.value_or(r.reason);
  Cause cause{guard == r.reason ? r.reason : guard + ": " + r.reason, std::nullopt};
  for (const CompileRow& previous : trace.compiles(c.run_id)) {
    if (previous.info.compile_key != r.previous_compile_key) continue;
    for (const GuardRecord& g : trace.guards(previous.id))
      if ((g.expr == guard || g.kind + ": " + g.expr == guard) && g.kind != "TENSOR_MATCH")
        cause.source = sourceOf(g.user_stack);
    break;
  }
  return cause;
}

struct RankCompile {
  const RankRun* rank;
  CompileRow row;
};

void addFinding(RankReport& report, std::vector<int64_t> ranks, const Slot& slot, Finding finding) {
  report.findings.push_back(
      {std::move(finding), std::move(ranks), slot.frame, slot.compileId, slot.graphKind});
}

// Ranks that compiled the slot against those that did not.
void compareCoverage(RankReport& report, const Slot& slot, const std::vector<RankCompile>& have) {
  if (have.size() == report.ranks.size()) return;
  std::vector<int64_t> with, without;
  for (const RankRun& r : report.ranks)
    (std::any_of(have.begin(), have.end(), [&](const RankCompile& c) { return c.rank == &r; })
         ? with
         : without)
        .push_back(r.rank);
  Cause cause = causeOf(*have.front().rank->trace, have.front().row);
  addFinding(report, with, slot,
             makeFinding(FindingKind::RankOnlyCompile, "", {}, cause.source,
                         rankList(with) + " compiled " + slotText(slot) + " and " +
                             rankList(without) + " did not" +
                             (cause.text.empty() ? "" : "; recompiled because " + cause.text) +
                             where(cause.source)));
}

// Ranks that made the slot's compile for another reason than the first rank did.
void compareCauses(RankReport& report, const Slot& slot, const std::vector<RankCompile>& have) {
  Cause first = causeOf(*have.front().rank->trace, have.front().row);
  for (size_t i = 1; i < have.size(); ++i) {
    Cause other = causeOf(*have[i].rank->trace, have[i].row);
    if (other.text == first.text) continue;
    auto reason = [](const Cause& c) {
      return c.text.empty() ? std::string("a first compile") : "`" + c.text + "`";
    };
    std::optional<FindingSource> source = other.source ? other.source : first.source;
    addFinding(report, {have[i].rank->rank}, slot,
               makeFinding(FindingKind::RankRecompileDiff, "", {}, source,
                           "rank " + std::to_string(have[i].rank->rank) + " made " +
                               slotText(slot) + " for another reason than rank " +
                               std::to_string(have.front().rank->rank) + ": " + reason(other) +
                               " against " + reason(first) + where(source)));
  }
}

// Ranks whose graph for the slot is not the first rank's up to shapes: the differ's own
// comparison says where they part; a graph that is the same but for input shapes is a note.
void compareGraphs(RankReport& report, const Slot& slot, const std::vector<RankCompile>& have) {
  const RankCompile& first = have.front();
  for (size_t i = 1; i < have.size(); ++i) {
    const RankCompile& other = have[i];
    DiffReport pair =
        diffCompiles({first.rank->trace, first.row.id}, {other.rank->trace, other.row.id});
    std::string ranks = "rank " + std::to_string(first.rank->rank) + " (A) and rank " +
                        std::to_string(other.rank->rank) + " (B)";
    if (pair.same) {
      if (first.row.info.input_signature_json == other.row.info.input_signature_json) continue;
      addFinding(report, {other.rank->rank}, slot,
                 makeFinding(FindingKind::RankInputShapes, "", {}, std::nullopt,
                             ranks + " compiled the same graph for " + slotText(slot) +
                                 " at other input shapes: " + pair.labelA + " against " +
                                 pair.labelB));
      continue;
    }
    // Where they part: the node nearest the inputs that one rank has and the other lacks (the
    // sizes that differ after it follow from it), else the first divergent pass's nodes, else
    // the top finding that makes the graphs differ.
    auto first = [&](FindingKind kind) {
      return std::find_if(pair.findings.begin(), pair.findings.end(),
                          [&](const Finding& f) { return f.kind == findingKindName(kind); });
    };
    auto part = first(FindingKind::UnmatchedNode);
    if (part == pair.findings.end()) part = first(FindingKind::FirstDivergentPass);
    if (part == pair.findings.end())
      part = std::find_if(pair.findings.begin(), pair.findings.end(),
                          [](const Finding& f) { return f.severity != Severity::Note; });
    addFinding(report, {other.rank->rank}, slot,
               makeFinding(FindingKind::RankGraphDiff, part->pass, part->nodes, part->source,
                           ranks + " traced different graphs for " + slotText(slot) + ": " +
                               part->message));
  }
}

} // namespace

std::vector<RankRun> rankRuns(const std::vector<const TraceReader*>& traces) {
  std::map<int64_t, RankRun> byRank;
  for (const TraceReader* trace : traces)
    for (const RunRow& run : trace->runs())
      if (run.info.rank)
        byRank[*run.info.rank] = {trace, run.id, *run.info.rank, run.info.world_size,
                                  run.info.process_group_backend};
  std::vector<RankRun> runs;
  for (auto& [rank, run] : byRank)
    runs.push_back(std::move(run));
  return runs;
}

RankReport diffRanks(const std::vector<RankRun>& ranks) {
  RankReport report{ranks, true, {}};
  std::map<Slot, std::vector<RankCompile>> slots; // each slot's compiles, in rank order
  for (const RankRun& rank : report.ranks)
    for (CompileRow& c : rank.trace->compiles(rank.runId)) {
      Slot slot = slotOf(c);
      std::vector<RankCompile>& have = slots[slot];
      // A slot compiled twice by one rank (Dynamo renumbered after a reset): the first counts.
      if (have.empty() || have.back().rank != &rank) have.push_back({&rank, std::move(c)});
    }
  for (const auto& [slot, have] : slots) {
    compareCoverage(report, slot, have);
    if (have.size() < 2) continue;
    compareCauses(report, slot, have);
    compareGraphs(report, slot, have);
  }
  std::stable_sort(
      report.findings.begin(), report.findings.end(),
      [](const RankFinding& x, const RankFinding& y) { return x.finding.score > y.finding.score; });
  report.same =
      std::none_of(report.findings.begin(), report.findings.end(),
                   [](const RankFinding& f) { return f.finding.severity != Severity::Note; });
  return report;
}

} // namespace loupe::diff
