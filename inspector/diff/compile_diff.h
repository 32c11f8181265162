// The differ: compares two compiles from one trace or two and ranks what it finds (finding.h).
// It walks the pipeline pass by pass with the graphs abstracted over input dims
// (dim_abstraction.h) and matched node for node (node_matcher.h); see docs/differ.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "inspector/diff/finding.h"
#include "inspector/trace/trace_reader.h"

namespace loupe::diff {

// One compile of one trace. Its snapshots are parsed as untrusted input: one that does not
// parse is an Error("diff") naming the trace, the compile and the pass.
struct CompileRef {
  const TraceReader* trace = nullptr;
  int64_t compileId = 0;
};

struct DiffOptions {
  // Compare compile `a` before and after this pass instead (b is ignored): the nodes the
  // pass removed, added or regrouped, and the dims it changed.
  std::string aroundPass;
};

struct DiffReport {
  CompileRef a, b;
  std::string labelA, labelB; // e.g. "compile 1 (0/0 forward, x=[8,64])"
  // The compiles differ only in shapes: no finding of Warning severity or above (a failed
  // guard, a Note, says why there are two compiles, not how they differ).
  bool same = false;
  std::vector<Finding> findings; // ranked, most likely culprit first
};

DiffReport diffCompiles(const CompileRef& a, const CompileRef& b, const DiffOptions& options = {});

// Three or more compiles of one frame: fits every matched node's dims as functions of the
// input dims and reports those that are not linear (kind nonlinear_dim), ranked.
std::vector<Finding> scalingAnalysis(const std::vector<CompileRef>& compiles);

} // namespace loupe::diff
