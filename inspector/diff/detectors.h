// The differ's finding detectors and what they read. Each detector looks for one family of
// differences and appends its findings; compile_diff.cpp runs them in a listed order and ranks
// what they found. A comparison of two compiles (or of one compile around a pass) gives every
// detector the same DiffInputs; a scaling analysis over several compiles gives ScalingInputs.
//
//   divergence_findings.cpp  first_divergent_pass, unmatched_node: where the graphs part ways;
//                            retraced_views: where they differ only in views
//   shape_findings.cpp       broadcast_blowup, hardcoded_dim: sizes that scale wrongly
//   nonlinear_findings.cpp   nonlinear_dim: dims fitted over several compiles
//   decision_findings.cpp    fusion_diff, kernel_diff: what the compiler decided
//   memory_findings.cpp      memory_diff: the planned peak
//   dynamo_findings.cpp      graph_break, failed_guard, diverged_branch: what Dynamo recorded
//                            around the compiles (breaks, guards, the lines each traced)
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "inspector/diff/dim_abstraction.h"
#include "inspector/diff/finding.h"
#include "inspector/diff/finding_builder.h"
#include "inspector/diff/graph_comparison.h"
#include "inspector/diff/loaded_compile.h"
#include "inspector/diff/node_matcher.h"

namespace loupe::diff {

struct DiffInputs {
  const LoadedCompile& a;
  const LoadedCompile& b; // the same compile as `a` when one compile is compared around a pass
  // The pass at which the pipelines part ways before their graphs differ: another pass in
  // each, or a pass that failed in one compile only.
  std::optional<size_t> partingPass;
  const PassComparison* frontend = nullptr;  // the first snapshots, when both have one
  const PassComparison* divergent = nullptr; // the first pass whose graphs differ beyond shapes
  // The last pass compared: the divergent one, else the last both compiles have graphs for.
  const PassComparison* last = nullptr;
  // The first pass whose graphs differ only in views (GraphComparison::viewsOnly), when the
  // walk went past it.
  const PassComparison* viewsOnly = nullptr;
  // Appended to a message that names A or B alone, when A and B are not two compiles:
  // " (A: before P, B: after)".
  std::string sides;
};

using Detector = void (*)(const DiffInputs&, std::vector<Finding>&);

void detectFirstDivergentPass(const DiffInputs& in, std::vector<Finding>& findings);
void detectUnmatchedNodes(const DiffInputs& in, std::vector<Finding>& findings);
void detectRetracedViews(const DiffInputs& in, std::vector<Finding>& findings);
void detectBroadcastBlowups(const DiffInputs& in, std::vector<Finding>& findings);
void detectHardcodedDims(const DiffInputs& in, std::vector<Finding>& findings);
void detectFusionDiffs(const DiffInputs& in, std::vector<Finding>& findings);
void detectKernelDiffs(const DiffInputs& in, std::vector<Finding>& findings);
void detectMemoryDiff(const DiffInputs& in, std::vector<Finding>& findings);
void detectGraphBreaks(const DiffInputs& in, std::vector<Finding>& findings);
void detectFailedGuards(const DiffInputs& in, std::vector<Finding>& findings);
void detectDivergedBranch(const DiffInputs& in, std::vector<Finding>& findings);

// Several compiles of one frame (or one with symbolic shapes), each by its first snapshot.
struct ScalingInputs {
  std::vector<const Graph*> graphs; // one per compile; the others are matched to the first
  DimAbstraction dims;
  std::vector<NodeMatching> matchings; // the first graph against each other graph, in order
  Positions positions;                 // of the first graph's nodes
  std::string pass;                    // the pass that left the first snapshots
};

using ScalingDetector = void (*)(const ScalingInputs&, std::vector<Finding>&);

// One symbolic compile's broadcast blow-ups (it is its own scaling law).
void detectSymbolicBlowups(const ScalingInputs& in, std::vector<Finding>& findings);
void detectNonlinearDims(const ScalingInputs& in, std::vector<Finding>& findings);

} // namespace loupe::diff
