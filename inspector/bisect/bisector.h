// The bisector: finds the pass, then the decision, that makes a compiled graph's results differ
// from a reference beyond tolerance. Every trial compiles a fresh copy of the graph with a
// pipeline prefix (PassManagerOptions::stopAfter) or a decision limit
// (PipelineOptions::bisectLimit), runs it on the same inputs and compares its outputs with the
// reference. See docs/bisect.md.
//
// The search assumes what makes bisection sound: once the culprit is applied the results stay
// wrong (later passes do not repair them), and before it they are right.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "compiler/pass/instrumentation.h"
#include "compiler/pass/pass.h"
#include "compiler/runtime/executable.h"
#include "compiler/tensor/tensor.h"

namespace loupe {

// |actual - expected| <= atol + rtol * |expected|, as torch.testing.assert_close checks.
struct Tolerance {
  double rtol = 1e-4;
  double atol = 1e-5;
};

// Looser than torch.testing's float32 defaults (1.3e-6, 1e-5): compiled kernels reassociate sums
// and bisection looks for miscompiles, not rounding. Half precision gets 1e-2 both.
Tolerance defaultTolerance(DType dtype);
// The default for a set of reference outputs: by the first floating one's dtype.
Tolerance defaultTolerance(const std::vector<Tensor>& reference);

// One compile-and-run of the search.
struct BisectTrial {
  std::string phase;      // "full" (the whole pipeline) | "pass" | "decision"
  std::string stopAfter;  // "pass": the last pass of the prefix
  int decisionLimit = -1; // "decision": decisions 1..limit applied; -1: all
  bool diverged = false;
  double maxAbsError = 0; // over every output
  double maxRelError = 0; // |actual - expected| / max(|expected|, 1e-6)
  std::string error;      // the compile or run failed (counts as diverged)
};

// A node the culprit decision involved, as found in the graph compiled up to that decision.
struct CulpritNode {
  std::string name;
  std::string op;
  SourceLoc loc;
  std::string fusedGroup;                // the fused node holding it, when in a fused body
  std::vector<std::string> fusedMembers; // "%name = op" of that group's (or its own) body
};

struct BisectResult {
  bool diverged = false;           // the full pipeline differs from the reference
  Tolerance tolerance;             // what "differs" meant
  BisectTrial full;                // the full pipeline's trial
  std::string firstBadPass;        // the shortest diverging prefix ends here
  int totalDecisions = 0;          // made by the full pipeline
  std::optional<Decision> culprit; // absent: no decision (the prefix diverges at limit 0)
  std::vector<CulpritNode> nodes;
  std::vector<BisectTrial> trials; // in the order they ran, the full pipeline first
};

struct BisectOptions {
  std::vector<std::string> pipeline;  // pass names
  PipelineOptions pipelineOptions;    // target, options, injectFaultAt; the limit is the search's
  std::optional<Tolerance> tolerance; // default: defaultTolerance of the first floating output
  FallbackFn fallback;                // for ops Loupe cannot run
  // After each trial: the trial, how many ran, and an estimate of how many there will be.
  std::function<void(const BisectTrial&, int done, int estimated)> progress;
};

// Bisects `graph` (left untouched) run on `inputs` against `reference` outputs. Throws Error for
// a graph whose outputs do not match the reference in number or shape at no limit.
BisectResult bisect(const Graph& graph, const std::vector<Tensor>& inputs,
                    const std::vector<Tensor>& reference, const BisectOptions& options);

// Compares a trial's outputs with the reference: fills its largest errors and its verdict (a
// different output count or shape is a divergence, with `error` saying so).
void compareOutputs(const std::vector<Tensor>& actual, const std::vector<Tensor>& expected,
                    const Tolerance& tolerance, BisectTrial& trial);

// The reference: `graph` run as written, with reference implementations (no passes).
std::vector<Tensor> runReference(const Graph& graph, const std::vector<Tensor>& inputs,
                                 const FallbackFn& fallback = {});

// "passes up to cse: differs": what a progress report says of a trial.
std::string describeTrial(const BisectTrial& trial);

// "culprit: decision 7 of 12 [pointwise-fusion] fusion: ..." and the nodes with their source
// lines, or "no divergence ...": what `loupe bisect` prints.
std::string describeResult(const BisectResult& result);

} // namespace loupe
