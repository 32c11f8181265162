// The differ's comparison of two compiles (docs/differ.md, "Findings"), as a pipeline of its
// own: load both compiles' snapshots (loaded_compile.h), walk the two pipelines pass by pass
// until the graphs stop being the same graph up to shapes (graph_comparison.h), run the
// detectors in the order listed below (detectors.h), and rank what they found so that the most
// likely culprit comes first. Findings of equal score keep the detectors' order.
#include "inspector/diff/compile_diff.h"

#include <algorithm>
#include <optional>

#include "compiler/ir/error.h"
#include "inspector/diff/compile_selector.h"
#include "inspector/diff/detectors.h"

namespace loupe::diff {

namespace {

// Two compiles: where the pipelines part ways, sizes that scale wrongly in the frontend's
// graphs, what the compiler decided, what Dynamo recorded around the compiles. Findings of
// equal score stay in this order.
constexpr Detector kCompileDetectors[] = {
    detectFirstDivergentPass, detectUnmatchedNodes, detectBroadcastBlowups, detectHardcodedDims,
    detectFusionDiffs,        detectKernelDiffs,    detectMemoryDiff,       detectGraphBreaks,
    detectFailedGuards,       detectDivergedBranch, detectRetracedViews,
};

// One compile before and after a pass: what the pass removed, added or regrouped.
constexpr Detector kAroundPassDetectors[] = {detectUnmatchedNodes, detectFusionDiffs};

// Several compiles of one frame, or one symbolic compile.
constexpr ScalingDetector kScalingDetectors[] = {detectSymbolicBlowups, detectNonlinearDims};

void rank(std::vector<Finding>& findings) {
  std::stable_sort(findings.begin(), findings.end(),
                   [](const Finding& x, const Finding& y) { return x.score > y.score; });
}

// The two pipelines walked while both recorded the same passes and left graphs that are the
// same up to shapes.
struct PipelineWalk {
  std::optional<size_t> partingPass;       // see DiffInputs
  std::optional<PassComparison> frontend;  // pass 0, when compared
  std::optional<PassComparison> latest;    // the last pass compared after pass 0
  bool diverged = false;                   // the last pass compared differs beyond shapes
  std::optional<PassComparison> viewsOnly; // the first pass whose graphs differ only in views

  const PassComparison* last() const { return latest ? &*latest : frontend ? &*frontend : nullptr; }
};

PipelineWalk walkPipelines(const LoadedCompile& A, const LoadedCompile& B) {
  PipelineWalk walk;
  std::vector<std::string> names;
  for (size_t i = 0; i < A.passes.size() && i < B.passes.size(); ++i) {
    const LoadedPass& pa = A.passes[i];
    const LoadedPass& pb = B.passes[i];
    if (pa.row.info.name != pb.row.info.name || !pa.graph || !pb.graph) {
      walk.partingPass = i;
      break;
    }
    if (i == 0) names = inputNames(A, *pa.graph);
    (i == 0 ? walk.frontend : walk.latest) =
        comparePass(i, pa.row.info.name, *pa.graph, *pb.graph, names);
    // Graphs that differ only in views compute the same: the walk goes on to find where
    // the computation itself differs.
    const PassComparison& now = *walk.last();
    if (now.cmp.same()) continue;
    bool backward = A.row.info.graph_kind == "backward" && B.row.info.graph_kind == "backward";
    std::optional<ViewDifference> views =
        viewDifference(now.cmp, *pa.graph, *pb.graph, names, backward);
    if (!views) {
      walk.diverged = true;
      break;
    }
    if (!walk.viewsOnly) {
      walk.viewsOnly = now;
      walk.viewsOnly->views = std::move(views);
    }
  }
  return walk;
}

DiffReport aroundPass(const CompileRef& ref, const std::string& passName) {
  LoadedCompile compile = loadCompile(ref);
  auto it = std::find_if(compile.passes.begin(), compile.passes.end(),
                         [&](const LoadedPass& p) { return p.row.info.name == passName; });
  if (it == compile.passes.end()) {
    std::string names;
    for (const auto& p : compile.passes)
      names += (names.empty() ? "" : ", ") + p.row.info.name;
    throw Error("usage", "compile " + std::to_string(ref.compileId) + " has no pass '" + passName +
                             "' (its passes: " + names + ")");
  }
  if (it == compile.passes.begin() || !std::prev(it)->graph || !it->graph)
    throw Error("diff", "pass '" + passName + "' of compile " + std::to_string(ref.compileId) +
                            " has no recorded graph before or after it");
  DiffReport report{ref,
                    ref,
                    describeCompile(*ref.trace, ref.compileId) + " before " + passName,
                    "after " + passName,
                    false,
                    {}};
  PassComparison compared = comparePass(size_t(it - compile.passes.begin()), passName,
                                        *std::prev(it)->graph, *it->graph, {});
  DiffInputs in{compile,   compile,   std::nullopt, nullptr,
                &compared, &compared, nullptr,      " (A: before " + passName + ", B: after)"};
  for (Detector detect : kAroundPassDetectors)
    detect(in, report.findings);
  rank(report.findings);
  report.same = !differs(report.findings);
  return report;
}

} // namespace

DiffReport diffCompiles(const CompileRef& a, const CompileRef& b, const DiffOptions& options) {
  if (!options.aroundPass.empty()) return aroundPass(a, options.aroundPass);
  LoadedCompile A = loadCompile(a), B = loadCompile(b);
  DiffReport report{a,
                    b,
                    describeCompile(*a.trace, a.compileId, *b.trace, b.compileId),
                    describeCompile(*b.trace, b.compileId, *a.trace, a.compileId),
                    false,
                    {}};
  PipelineWalk walk = walkPipelines(A, B);
  DiffInputs in{A,
                B,
                walk.partingPass,
                walk.frontend ? &*walk.frontend : nullptr,
                walk.diverged ? walk.last() : nullptr,
                walk.last(),
                walk.viewsOnly ? &*walk.viewsOnly : nullptr,
                ""};
  for (Detector detect : kCompileDetectors)
    detect(in, report.findings);
  rank(report.findings);
  report.same = !differs(report.findings);
  return report;
}

std::vector<Finding> scalingAnalysis(const std::vector<CompileRef>& compiles) {
  std::vector<LoadedCompile> loaded;
  std::vector<const Graph*> graphs;
  for (const CompileRef& ref : compiles) {
    loaded.push_back(loadCompile(ref));
    const LoadedCompile& c = loaded.back();
    if (c.passes.empty() || !c.passes.front().graph)
      throw Error("diff", "compile " + std::to_string(ref.compileId) + " has no recorded graph",
                  ErrorContext{.file = ref.trace->path()});
    graphs.push_back(c.passes.front().graph.get());
  }
  if (graphs.empty()) return {};
  const Graph& first = *graphs.front();
  ScalingInputs in{graphs,
                   DimAbstraction(graphs, inputNames(loaded.front(), first)),
                   {},
                   {},
                   loaded.front().passes.front().row.info.name};
  // Each node of the first compile with its counterpart in every other compile.
  for (size_t k = 1; k < graphs.size(); ++k)
    in.matchings.push_back(matchNodes(first, *graphs[k]));
  in.positions.add(first);

  std::vector<Finding> findings;
  for (ScalingDetector detect : kScalingDetectors)
    detect(in, findings);
  rank(findings);
  return findings;
}

} // namespace loupe::diff
