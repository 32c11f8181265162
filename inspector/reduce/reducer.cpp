#include "inspector/reduce/reducer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

#include "compiler/ir/error.h"
#include "compiler/ops/verifier.h"
#include "driver/compile_graph.h"
#include "inspector/reduce/intermediate_values.h"
#include "inspector/reduce/node_subset.h"

namespace loupe {
namespace {

using Clock = std::chrono::steady_clock;

// The pipeline before kernel selection: fused groups then run by reference implementations,
// so a trial builds no generated kernel. A graph-level miscompile already shows there.
std::vector<std::string> graphLevelPrefix(const std::vector<std::string>& pipeline) {
  auto end = std::find(pipeline.begin(), pipeline.end(), "kernel-selection");
  return {pipeline.begin(), end};
}

// A decision as a smaller graph's compile makes it again: its pass, its kind and the values it
// names (a candidate keeps the whole graph's value names), whatever its ordinal.
struct DecisionSignature {
  std::string pass, kind;
  std::vector<std::string> nodes;
  friend bool operator==(const DecisionSignature&, const DecisionSignature&) = default;
};

// The injected fault follows a decision, and a candidate numbers its decisions afresh: its
// decision N is most often another rule's, or on another node. So the whole graph's decision N
// is remembered, and each candidate is first compiled without the fault to find the ordinal at
// which it makes that same decision; the fault is injected there. A candidate that does not make
// it shows no divergence.
class DecisionFinder : public PassInstrumentation {
public:
  DecisionFinder(int ordinal, std::optional<DecisionSignature> wanted)
      : ordinal_(ordinal), wanted_(std::move(wanted)) {}
  void onDecision(const Decision& decision) override {
    DecisionSignature signature{decision.pass, decision.kind, decision.nodes};
    if (decision.ordinal == ordinal_) atOrdinal = signature;
    if (wanted_ && !found && signature == *wanted_) found = decision.ordinal;
  }
  std::optional<DecisionSignature> atOrdinal; // decision `ordinal`, when the compile made it
  std::optional<int> found;                   // the ordinal of the wanted decision
private:
  int ordinal_;
  std::optional<DecisionSignature> wanted_;
};

class Search {
public:
  Search(const Graph& graph, const std::vector<Tensor>& inputs, const ReduceOptions& options)
      : graph_(graph), inputs_(inputs), options_(options), nodes_(graph.numNodes()),
        start_(Clock::now()) {}

  ReduceResult run() {
    result_.originalNodes = result_.reducedNodes = nodes_;
    std::vector<Tensor> reference = runReference(graph_, inputs_, options_.fallback);
    result_.tolerance = options_.tolerance.value_or(defaultTolerance(reference));
    std::vector<bool> all(nodes_, true);

    // The cheapest pipeline that still shows the divergence, checked on the whole graph; here
    // a compile or run that fails counts as a divergence, as in a bisection trial.
    std::vector<std::string> prefix = graphLevelPrefix(options_.pipeline);
    result_.pipeline = options_.pipeline;
    originalFailed_ = true;
    BisectTrial whole;
    if (!prefix.empty() && prefix.size() < options_.pipeline.size()) {
      result_.pipeline = prefix;
      whole = check(graph_.clone(), inputs_);
      if (!whole.diverged) {
        result_.pipeline = options_.pipeline;
        faultRecorded_ = false;
      }
    }
    if (result_.pipeline == options_.pipeline) whole = check(graph_.clone(), inputs_);
    if (!whole.diverged) return finish(graph_.clone(), inputs_);
    result_.diverged = true;
    originalFailed_ = !whole.error.empty();
    values_ = computeIntermediateValues(graph_, inputs_, options_.fallback);
    tested_[all] = true;
    ddmin();
    NodeSubset reduced = extractNodeSubset(graph_, best_.empty() ? all : best_, inputs_, values_);
    ShrunkDims shrunk = shrinkDims(*reduced.graph, reduced.inputs, dimShrinkOptions());
    result_.dims = shrunk.dims;
    return finish(std::move(shrunk.graph), std::move(shrunk.inputs));
  }

private:
  bool outOfTime() {
    if (seconds() < options_.budgetSeconds) return false;
    result_.budgetExhausted = true;
    return true;
  }
  double seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

  // Compiles and runs a candidate against its own reference. Failures of the candidate itself
  // (it does not verify, or its reference does not run: a dropped node left a symbol unbound)
  // make it no divergence; a compiled run that fails is one only when the original's did.
  BisectTrial check(std::unique_ptr<Graph> graph, const std::vector<Tensor>& inputs) {
    BisectTrial trial;
    trial.phase = "full";
    ++result_.trials;
    std::vector<Tensor> expected;
    try {
      verify(*graph);
      expected = runReference(*graph, inputs, options_.fallback);
    } catch (const std::exception& e) {
      trial.error = std::string("invalid candidate: ") + e.what();
      return trial;
    }
    CompileOptions compileOptions;
    compileOptions.pipeline = result_.pipeline;
    compileOptions.pipelineOptions = options_.pipelineOptions;
    int& faultAt = compileOptions.pipelineOptions.injectFaultAt;
    if (faultAt > 0 && faultRecorded_ && faultedDecision_) {
      std::optional<int> ordinal = findFaultedDecision(*graph);
      if (!ordinal) {
        trial.error = "the compile makes no " + faultedDecision_->pass + " " +
                      faultedDecision_->kind + " decision on the faulted values";
        return trial;
      }
      faultAt = *ordinal;
    }
    compileOptions.buildExecutable = true;
    compileOptions.executable.fallback = options_.fallback;
    DecisionFinder faulted(faultAt, std::nullopt);
    compileOptions.instrumentation.push_back(&faulted);
    result_.injectFault = faultAt;
    CompileResult compiled = compileGraph(std::move(graph), compileOptions);
    try {
      compiled.throwIfFailed();
      compareOutputs(compiled.executable->run(inputs), expected, result_.tolerance, trial);
    } catch (const std::exception& e) {
      trial.error = e.what();
      trial.diverged = originalFailed_;
    }
    if (!faultRecorded_) { // the whole graph's check: what every candidate's fault must follow
      faultedDecision_ = faulted.atOrdinal;
      faultRecorded_ = true;
    }
    return trial;
  }

  // The ordinal of the whole graph's faulted decision in `graph`'s compile (no fault injected).
  std::optional<int> findFaultedDecision(const Graph& graph) {
    CompileOptions probe;
    probe.pipeline = result_.pipeline;
    probe.pipelineOptions = options_.pipelineOptions;
    probe.pipelineOptions.injectFaultAt = -1;
    DecisionFinder finder(-1, faultedDecision_);
    probe.instrumentation.push_back(&finder);
    compileGraph(graph.clone(), probe); // a failed compile finds nothing
    return finder.found;
  }

  // Whether the nodes `keep` selects still diverge; remembers the smallest that does.
  bool diverges(const std::vector<bool>& keep) {
    if (auto it = tested_.find(keep); it != tested_.end()) return it->second;
    NodeSubset subset = extractNodeSubset(graph_, keep, inputs_, values_);
    bool diverged =
        !subset.graph->outputs().empty() && check(std::move(subset.graph), subset.inputs).diverged;
    tested_[keep] = diverged;
    size_t kept = size_t(std::count(keep.begin(), keep.end(), true));
    if (diverged && kept < result_.reducedNodes) {
      best_ = keep;
      result_.reducedNodes = kept;
    }
    report();
    return diverged;
  }

  // The dims phase checks its candidates as the node phase does, within the same budget.
  DimShrinkOptions dimShrinkOptions() {
    DimShrinkOptions dims;
    dims.diverges = [this](std::unique_ptr<Graph> graph, const std::vector<Tensor>& inputs) {
      bool diverged = check(std::move(graph), inputs).diverged;
      report();
      return diverged;
    };
    dims.outOfTime = [this] { return outOfTime(); };
    dims.shrunk = [this](const std::vector<DimChange>& changes) {
      result_.dims = changes;
      report();
    };
    return dims;
  }

  void report() {
    if (options_.progress)
      options_.progress(
          {result_.originalNodes, result_.reducedNodes, result_.trials, seconds(), result_.dims});
  }

  std::vector<bool> mask(const std::vector<size_t>& indices) const {
    std::vector<bool> keep(nodes_, false);
    for (size_t i : indices)
      keep[i] = true;
    return keep;
  }

  // Zeller's ddmin: try each of n chunks, then each complement; on success continue from it
  // with coarser chunks, else refine until chunks are single nodes.
  void ddmin() {
    std::vector<size_t> current(nodes_);
    for (size_t i = 0; i < nodes_; ++i)
      current[i] = i;
    size_t n = 2;
    while (current.size() >= 2 && !outOfTime()) {
      std::vector<std::vector<size_t>> chunks(n);
      for (size_t i = 0; i < current.size(); ++i)
        chunks[i * n / current.size()].push_back(current[i]);
      bool reduced = false;
      for (size_t c = 0; c < n && !reduced && !outOfTime(); ++c) {
        if (diverges(mask(chunks[c]))) {
          current = chunks[c];
          n = 2;
          reduced = true;
        }
      }
      for (size_t c = 0; c < n && !reduced && n > 2 && !outOfTime(); ++c) {
        std::vector<size_t> complement;
        for (size_t other = 0; other < n; ++other)
          if (other != c)
            complement.insert(complement.end(), chunks[other].begin(), chunks[other].end());
        std::sort(complement.begin(), complement.end());
        if (diverges(mask(complement))) {
          current = complement;
          n = std::max<size_t>(n - 1, 2);
          reduced = true;
        }
      }
      if (reduced) continue;
      if (n >= current.size()) break;
      n = std::min(n * 2, current.size());
    }
  }

  ReduceResult finish(std::unique_ptr<Graph> graph, std::vector<Tensor> inputs) {
    result_.graph = std::move(graph);
    result_.inputs = std::move(inputs);
    if (result_.diverged) result_.check = check(result_.graph->clone(), result_.inputs);
    result_.reducedNodes = result_.graph->numNodes();
    if (faultedDecision_)
      result_.faultFollows = faultedDecision_->pass + " " + faultedDecision_->kind;
    result_.wallMs = seconds() * 1000;
    report();
    return std::move(result_);
  }

  const Graph& graph_;
  const std::vector<Tensor>& inputs_;
  const ReduceOptions& options_;
  size_t nodes_;
  Clock::time_point start_;
  bool originalFailed_ = false;
  // Set by the whole graph's check; none when it makes no decision N (the fault never happens).
  std::optional<DecisionSignature> faultedDecision_;
  bool faultRecorded_ = false;
  std::map<const Value*, Tensor> values_;
  std::map<std::vector<bool>, bool> tested_;
  std::vector<bool> best_;
  ReduceResult result_;
};

} // namespace

ReduceResult reduce(const Graph& graph, const std::vector<Tensor>& inputs,
                    const ReduceOptions& options) {
  if (options.pipeline.empty())
    throw Error("usage", "reduce needs a pipeline of at least one pass");
  return Search(graph, inputs, options).run();
}

std::string describeProgress(const ReduceProgress& progress) {
  std::string dims = describeDimChanges(progress.dims);
  return "reduce: " + std::to_string(progress.originalNodes) + " -> " +
         std::to_string(progress.reducedNodes) + " nodes, " +
         (dims.empty() ? "" : "dims " + dims + ", ") + std::to_string(progress.trials) +
         " trials, " + std::to_string(int(std::lround(progress.seconds))) + " s";
}

} // namespace loupe
