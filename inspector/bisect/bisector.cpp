#include "inspector/bisect/bisector.h"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "compiler/ir/error.h"
#include "driver/compile_graph.h"

namespace loupe {
namespace {

// Keeps the counted decisions of one compile (an injected fault's announcement is not one).
class DecisionCollector : public PassInstrumentation {
public:
  void onDecision(const Decision& decision) override {
    if (decision.ordinal > 0) decisions.push_back(decision);
  }
  bool wantsDecisionText() const override { return true; } // the culprit is reported with it
  std::vector<Decision> decisions;
};

struct Compiled {
  CompileResult result;
  std::vector<Decision> decisions;
};

// Compiles a copy of `graph` with the first `passes` passes and decisions 1..limit (-1: all);
// `runnable`: with its executable.
Compiled compile(const Graph& graph, const BisectOptions& options, size_t passes, int limit,
                 bool runnable) {
  CompileOptions compileOptions;
  compileOptions.pipeline.assign(options.pipeline.begin(), options.pipeline.begin() + long(passes));
  compileOptions.pipelineOptions = options.pipelineOptions;
  compileOptions.pipelineOptions.bisectLimit = limit;
  DecisionCollector collector;
  compileOptions.instrumentation.push_back(&collector);
  compileOptions.buildExecutable = runnable;
  compileOptions.executable.fallback = options.fallback;
  CompileResult result = compileGraph(graph.clone(), compileOptions);
  return Compiled{std::move(result), std::move(collector.decisions)};
}

// The search's own compiles (decision counts, the culprit's graphs) repeat a prefix a trial
// compiled without error, so a failure here is unexpected and ends the search.
Compiled compileOrThrow(const Graph& graph, const BisectOptions& options, size_t passes,
                        int limit) {
  Compiled compiled = compile(graph, options, passes, limit, /*runnable=*/false);
  compiled.result.throwIfFailed();
  return compiled;
}

std::string shapeText(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? "," : "") + std::to_string(shape[i]);
  return text + "]";
}

} // namespace

void compareOutputs(const std::vector<Tensor>& actual, const std::vector<Tensor>& expected,
                    const Tolerance& tolerance, BisectTrial& trial) {
  if (actual.size() != expected.size()) {
    trial.diverged = true;
    trial.error = std::to_string(actual.size()) + " outputs where the reference has " +
                  std::to_string(expected.size());
    return;
  }
  for (size_t i = 0; i < actual.size(); ++i) {
    if (actual[i].shape() != expected[i].shape()) {
      trial.diverged = true;
      trial.error = "output " + std::to_string(i) + " has shape " + shapeText(actual[i].shape()) +
                    " where the reference has " + shapeText(expected[i].shape());
      return;
    }
    for (int64_t k = 0; k < actual[i].numel(); ++k) {
      double a = actual[i].at(k), e = expected[i].at(k);
      if (std::isnan(a) || std::isnan(e)) {
        trial.diverged |= std::isnan(a) != std::isnan(e);
        continue;
      }
      double abs = a == e ? 0 : std::fabs(a - e); // equal infinities agree
      trial.maxAbsError = std::max(trial.maxAbsError, abs);
      trial.maxRelError = std::max(trial.maxRelError, abs / std::max(std::fabs(e), 1e-6));
      trial.diverged |= !(abs <= tolerance.atol + tolerance.rtol * std::fabs(e));
    }
  }
}

namespace {

class Search {
public:
  Search(const Graph& graph, const std::vector<Tensor>& inputs,
         const std::vector<Tensor>& reference, const BisectOptions& options)
      : graph_(graph), inputs_(inputs), reference_(reference), options_(options),
        tolerance_(options.tolerance.value_or(defaultTolerance(reference))) {}

  BisectResult run() {
    size_t passes = options_.pipeline.size();
    result_.tolerance = tolerance_;
    BisectTrial& full = trial("full", passes, -1);
    result_.full = full;
    result_.diverged = full.diverged;
    if (!result_.diverged) return std::move(result_);
    estimated_ += log2Ceil(passes) + 1 + log2Ceil(size_t(result_.totalDecisions));

    // The shortest diverging prefix, by binary search: passes are few, but every trial compiles
    // and runs the model, and the search keeps the number of trials logarithmic anyway.
    size_t good = 0, bad = passes; // no passes is the reference itself
    while (bad - good > 1) {
      size_t mid = (good + bad) / 2;
      (trial("pass", mid, -1).diverged ? bad : good) = mid;
    }
    result_.firstBadPass = options_.pipeline[bad - 1];

    // Within that prefix, the smallest decision limit that diverges.
    int decisions = decisionsOf(bad);
    if (trial("decision", bad, 0).diverged) return std::move(result_);
    int goodLimit = 0, badLimit = decisions;
    while (badLimit - goodLimit > 1) {
      int mid = (goodLimit + badLimit) / 2;
      (trial("decision", bad, mid).diverged ? badLimit : goodLimit) = mid;
    }
    if (badLimit == 0) return std::move(result_);
    describeCulprit(bad, badLimit);
    return std::move(result_);
  }

private:
  static int log2Ceil(size_t n) {
    int steps = 0;
    while ((size_t(1) << steps) < n)
      ++steps;
    return steps;
  }

  // Decisions made by the prefix with no limit (the full pipeline's are known).
  int decisionsOf(size_t passes) {
    if (passes == options_.pipeline.size()) return result_.totalDecisions;
    return int(compileOrThrow(graph_, options_, passes, -1).decisions.size());
  }

  BisectTrial& trial(const std::string& phase, size_t passes, int limit) {
    BisectTrial t;
    t.phase = phase;
    t.stopAfter = passes ? options_.pipeline[passes - 1] : "";
    t.decisionLimit = limit;
    // A trial that fails to compile or run counts as diverged.
    Compiled compiled = compile(graph_, options_, passes, limit, /*runnable=*/true);
    if (!compiled.result.ok()) {
      t.diverged = true;
      t.error = compiled.result.error->message;
    } else {
      if (phase == "full") result_.totalDecisions = int(compiled.decisions.size());
      try {
        compareOutputs(compiled.result.executable->run(inputs_), reference_, tolerance_, t);
      } catch (const std::exception& e) {
        t.diverged = true;
        t.error = e.what();
      }
    }
    result_.trials.push_back(std::move(t));
    int done = int(result_.trials.size());
    if (options_.progress)
      options_.progress(result_.trials.back(), done, std::max(done, estimated_));
    return result_.trials.back();
  }

  void describeCulprit(size_t passes, int limit) {
    Compiled at = compileOrThrow(graph_, options_, passes, limit);
    result_.culprit = at.decisions.at(size_t(limit - 1));
    // A decision that erased or merged its nodes left them only in the graph before it.
    Compiled before = compileOrThrow(graph_, options_, passes, limit - 1);
    for (const std::string& name : result_.culprit->nodes) {
      if (name.empty()) continue;
      if (auto node = findNode(*at.result.graph, name)) {
        result_.nodes.push_back(*node);
      } else if (auto earlier = findNode(*before.result.graph, name)) {
        result_.nodes.push_back(*earlier);
      }
    }
  }

  static std::vector<std::string> bodyOf(const Node& fused) {
    std::vector<std::string> members;
    for (Node* member : fused.body()->nodes())
      members.push_back(member->describe());
    return members;
  }

  static std::optional<CulpritNode> findNode(const Graph& graph, const std::string& name) {
    std::optional<CulpritNode> found;
    walk(graph, [&](Node& node) {
      if (found) return;
      for (Value* result : node.results()) {
        if (result->name() != name) continue;
        found = CulpritNode{name, node.op(), node.loc(), "", {}};
        if (node.hasBody()) found->fusedMembers = bodyOf(node);
        if (Node* group = node.graph()->parentNode()) {
          found->fusedGroup = group->numResults() ? group->result()->name() : "";
          found->fusedMembers = bodyOf(*group);
          if (!found->loc.known()) found->loc = group->loc();
        }
        return;
      }
    });
    return found;
  }

  const Graph& graph_;
  const std::vector<Tensor>& inputs_;
  const std::vector<Tensor>& reference_;
  const BisectOptions& options_;
  Tolerance tolerance_;
  BisectResult result_;
  int estimated_ = 1;
};

std::string formatNumber(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", value);
  return text;
}

} // namespace

Tolerance defaultTolerance(DType dtype) {
  if (isReducedFloat(dtype)) return {1e-2, 1e-2};
  if (dtype == DType::F64) return {1e-7, 1e-7};
  return {};
}

Tolerance defaultTolerance(const std::vector<Tensor>& reference) {
  for (const Tensor& t : reference)
    if (isFloating(t.dtype())) return defaultTolerance(t.dtype());
  return defaultTolerance(DType::F32);
}

BisectResult bisect(const Graph& graph, const std::vector<Tensor>& inputs,
                    const std::vector<Tensor>& reference, const BisectOptions& options) {
  if (options.pipeline.empty())
    throw Error("usage", "bisect needs a pipeline of at least one pass");
  return Search(graph, inputs, reference, options).run();
}

std::vector<Tensor> runReference(const Graph& graph, const std::vector<Tensor>& inputs,
                                 const FallbackFn& fallback) {
  CompileOptions options; // no passes: the graph as written, with a default plan
  options.buildExecutable = true;
  options.executable.fallback = fallback;
  CompileResult reference = compileGraph(graph.clone(), options);
  reference.throwIfFailed();
  return reference.executable->run(inputs);
}

std::string describeTrial(const BisectTrial& trial) {
  std::string what = trial.phase == "full" ? "full pipeline"
                     : trial.phase == "pass"
                         ? "passes up to " + trial.stopAfter
                         : "decisions 1.." + std::to_string(trial.decisionLimit);
  return what + (trial.diverged ? ": differs" : ": matches");
}

std::string describeResult(const BisectResult& result) {
  std::ostringstream os;
  const BisectTrial& full = result.full;
  std::string errors = "max abs error " + formatNumber(full.maxAbsError) + ", max rel error " +
                       formatNumber(full.maxRelError);
  if (!result.diverged) {
    os << "no divergence: the compiled results match the reference (" << errors << ")\n";
    return os.str();
  }
  os << "divergence: the compiled results differ from the reference ("
     << (full.error.empty() ? errors : full.error) << ")\n";
  os << "first bad pass: " << result.firstBadPass << "\n";
  if (!result.culprit) {
    os << "culprit: pass " << result.firstBadPass
       << " itself: it diverges with none of its decisions applied\n";
    return os.str();
  }
  const Decision& d = *result.culprit;
  os << "culprit: decision " << d.ordinal << " of " << result.totalDecisions << " [" << d.pass
     << "] " << d.kind << ": " << d.description << "\n";
  for (const CulpritNode& node : result.nodes) {
    os << "  %" << node.name << " = " << node.op;
    if (!node.loc.file.empty()) os << "  " << node.loc.file << ":" << node.loc.line;
    if (!node.loc.module_path.empty()) os << "  (" << node.loc.module_path << ")";
    os << "\n";
    if (!node.fusedMembers.empty()) {
      os << "    fused" << (node.fusedGroup.empty() ? "" : " in %" + node.fusedGroup) << ":";
      for (const std::string& member : node.fusedMembers)
        os << " " << member << ";";
      os << "\n";
    }
  }
  return os.str();
}

} // namespace loupe
