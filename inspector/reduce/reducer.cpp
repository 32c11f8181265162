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

// What the injected fault followed in a compile: the pass and kind of decision N. A candidate
// numbers its decisions afresh, so its decision N may be another rule's; the reduction keeps
// only candidates where the fault follows the same kind of decision as in the whole graph.
class FaultedDecision : public PassInstrumentation {
public:
  explicit FaultedDecision(int ordinal) : ordinal_(ordinal) {}
  void onDecision(const Decision& decision) override {
    if (decision.ordinal == ordinal_) seen = decision.pass + " " + decision.kind;
  }
  std::string seen; // "pass kind"; empty when the compile made fewer decisions
private:
  int ordinal_;
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
        faultedDecision_.reset();
      }
    }
    if (result_.pipeline == options_.pipeline) whole = check(graph_.clone(), inputs_);
    if (!whole.diverged) return finish(all);
    result_.diverged = true;
    originalFailed_ = !whole.error.empty();
    values_ = computeIntermediateValues(graph_, inputs_, options_.fallback);
    tested_[all] = true;
    ddmin();
    return finish(best_.empty() ? all : best_);
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
    compileOptions.buildExecutable = true;
    compileOptions.executable.fallback = options_.fallback;
    FaultedDecision faulted(options_.pipelineOptions.injectFaultAt);
    compileOptions.instrumentation.push_back(&faulted);
    CompileResult compiled = compileGraph(std::move(graph), compileOptions);
    try {
      compiled.throwIfFailed();
      compareOutputs(compiled.executable->run(inputs), expected, result_.tolerance, trial);
    } catch (const std::exception& e) {
      trial.error = e.what();
      trial.diverged = originalFailed_;
    }
    if (!faultedDecision_) {
      faultedDecision_ = faulted.seen; // the whole graph's: what every candidate must match
    } else if (faulted.seen != *faultedDecision_) {
      trial.diverged = false;
      trial.error = "the fault follows " + (faulted.seen.empty() ? "no decision" : faulted.seen) +
                    ", not " + *faultedDecision_;
    }
    return trial;
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

  void report() {
    if (options_.progress)
      options_.progress({result_.originalNodes, result_.reducedNodes, result_.trials, seconds()});
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

  ReduceResult finish(const std::vector<bool>& keep) {
    if (result_.diverged) {
      NodeSubset subset = extractNodeSubset(graph_, keep, inputs_, values_);
      result_.graph = std::move(subset.graph);
      result_.inputs = std::move(subset.inputs);
      result_.check = check(result_.graph->clone(), result_.inputs);
    } else {
      result_.graph = graph_.clone();
      result_.inputs = inputs_;
    }
    result_.reducedNodes = result_.graph->numNodes();
    result_.faultFollows = faultedDecision_.value_or("");
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
  std::optional<std::string> faultedDecision_; // set by the whole graph's check
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
  return "reduce: " + std::to_string(progress.originalNodes) + " -> " +
         std::to_string(progress.reducedNodes) + " nodes, " + std::to_string(progress.trials) +
         " trials, " + std::to_string(int(std::lround(progress.seconds))) + " s";
}

} // namespace loupe
