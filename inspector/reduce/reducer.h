// The reducer: shrinks a graph whose compiled results differ from its reference to a smaller
// graph that still differs, for a bug report or a unit test. Delta debugging (ddmin) over the
// graph's top-level nodes: a candidate keeps a subset of them (node_subset.h), values it reads
// from dropped nodes become inputs fed with what the whole graph computed there. Then the
// inputs' concrete dims are made smaller (dim_shrink.h). A candidate
// "still diverges" when it verifies, its reference runs, and its compile with the same pipeline
// and options (an injected fault included) differs from that reference beyond tolerance, as the
// bisector judges a trial. Searches within a time budget and returns the smallest diverging
// graph found when it ends. See docs/reduce.md.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/pass/pass.h"
#include "compiler/runtime/executable.h"
#include "compiler/tensor/tensor.h"
#include "inspector/bisect/bisector.h"
#include "inspector/reduce/dim_shrink.h"

namespace loupe {

// Where the search stands, after each trial.
struct ReduceProgress {
  size_t originalNodes = 0;
  size_t reducedNodes = 0; // the smallest diverging graph so far
  int trials = 0;
  double seconds = 0;
  std::vector<DimChange> dims; // the inputs' concrete dims so far (once the node phase is done)
};

struct ReduceOptions {
  std::vector<std::string> pipeline;  // pass names: the pipeline that miscompiles
  PipelineOptions pipelineOptions;    // the injected fault, target (no bisect limit: all)
  std::optional<Tolerance> tolerance; // default: by the reference outputs' dtype
  FallbackFn fallback;                // for ops Loupe cannot run
  double budgetSeconds = 180;         // then the smallest graph found is returned
  std::function<void(const ReduceProgress&)> progress;
};

struct ReduceResult {
  bool diverged = false; // the original graph differs; false: nothing was reduced
  // The pipeline every candidate was checked with: the given one, or its prefix before
  // kernel selection when the original already differs there (no generated kernel is built).
  std::vector<std::string> pipeline;
  Tolerance tolerance;
  std::unique_ptr<Graph> graph; // the smallest diverging graph (the original when none smaller)
  std::vector<Tensor> inputs;   // its inputs
  BisectTrial check;            // its check: errors, or why it failed to compile or run
  // With an injected fault: "pass kind" of the decision it follows, the same decision (pass,
  // kind, values named) in the original and in every candidate kept; decisions are numbered
  // afresh in a smaller graph, so the reduced graph's ordinal of it is `injectFault`.
  std::string faultFollows;
  int injectFault = -1;
  size_t originalNodes = 0;
  size_t reducedNodes = 0;
  std::vector<DimChange> dims; // the reduced graph's concrete input dims, before and after
  int trials = 0;
  double wallMs = 0;
  bool budgetExhausted = false; // the search stopped at the budget, not at a minimum
};

// Reduces `graph` (verified; left untouched) run on `inputs`.
ReduceResult reduce(const Graph& graph, const std::vector<Tensor>& inputs,
                    const ReduceOptions& options);

// "reduce: 37 -> 12 nodes, 14 trials, 9 s": a progress line; with the dims that shrank,
// "reduce: 37 -> 3 nodes, dims 768 -> 2, 8 -> 1, 30 trials, 11 s".
std::string describeProgress(const ReduceProgress& progress);

} // namespace loupe
