// The differ across the ranks of one torch.distributed job (docs/differ.md, "Ranks"): each
// rank's run (the trace records its rank, world size and process group backend) lines up its
// compiles with the other ranks' by frame, compile id and graph kind, and the ranks that
// compiled something the others did not, recompiled for another reason, or traced another
// graph are reported, the last with the node and user line where the graphs part. Ranks that
// compile differently are a classic cause of collective hangs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "inspector/diff/finding.h"
#include "inspector/trace/trace_reader.h"

namespace loupe::diff {

// One rank's run: the run of a trace that recorded this rank.
struct RankRun {
  const TraceReader* trace = nullptr;
  int64_t runId = 0;
  int64_t rank = 0;
  std::optional<int64_t> worldSize;
  std::optional<std::string> backend; // the process group's; absent before it was initialised
};

// The runs of these traces that carry a rank, one per rank (a rank recorded by several runs:
// the latest), ordered by rank.
std::vector<RankRun> rankRuns(const std::vector<const TraceReader*>& traces);

// A finding about some ranks: which ones, and the compile slot it concerns.
struct RankFinding {
  Finding finding;
  std::vector<int64_t> ranks; // the ranks that differ from the others (or from the first rank)
  std::string frame;          // "forward (model.py:12)"
  std::string compileId;      // Dynamo's compile id within the frame ("0", "1")
  std::string graphKind;
};

struct RankReport {
  std::vector<RankRun> ranks;
  // No finding of Warning severity or above: every rank compiled the same graphs up to shapes.
  bool same = true;
  std::vector<RankFinding> findings; // ranked, most likely culprit first
};

// Compares the ranks' compiles. Graphs are compared with diffCompiles against the lowest rank
// that has the same compile. Throws Error("diff") for an unreadable snapshot, as diffCompiles.
RankReport diffRanks(const std::vector<RankRun>& ranks);

} // namespace loupe::diff
