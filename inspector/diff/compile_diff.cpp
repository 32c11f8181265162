// The differ's comparison of two compiles (docs/differ.md, "Findings"): load both pipelines'
// snapshots, walk them pass by pass until the graphs stop being the same graph up to shapes,
// look in the frontend graphs for sizes that scale wrongly (broadcast blow-ups, hard-coded
// dims), then compare what the compiles decided (fusion, kernels, memory) and what Dynamo
// recorded around them (graph breaks, guards). Every finding is scored so that the most
// likely culprit comes first.
#include "inspector/diff/compile_diff.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>

#include "compiler/ir/error.h"
#include "compiler/ir/parser.h"
#include "inspector/diff/compile_selector.h"
#include "inspector/diff/dim_abstraction.h"
#include "inspector/diff/dim_fit.h"
#include "inspector/diff/finding_kinds.h"
#include "inspector/diff/node_matcher.h"

namespace loupe::diff {

namespace {

// ---- scoring (docs/differ.md, "Scoring"): a base per kind (finding_kinds.def), then up to
// kPositionBonus for a node nearest the inputs and kSourceBonus for naming a user line.
constexpr double kPositionBonus = 5;
constexpr double kSourceBonus = 3;

// How much one finding says on its own: a weak one starts from its kind's weak base
// (finding_kinds.def says which instances are weak).
enum class Evidence { Strong, Weak };

double baseScore(FindingKind kind, Evidence evidence) {
  const FindingKindInfo& info = findingKindInfo(kind);
  return evidence == Evidence::Weak && info.weakBase > 0 ? info.weakBase : info.base;
}

// ---- one compile's pipeline, parsed

struct LoadedPass {
  PassRow row;
  std::unique_ptr<Graph> graph; // null when the pass failed before leaving a graph
};

struct LoadedCompile {
  CompileRef ref;
  CompileRow row;
  std::vector<LoadedPass> passes;
};

LoadedCompile load(const CompileRef& ref) {
  if (!ref.trace)
    throw Error("diff", "no trace given for compile " + std::to_string(ref.compileId));
  LoadedCompile loaded{ref, ref.trace->compile(ref.compileId), {}};
  for (PassRow& row : ref.trace->passes(ref.compileId)) {
    LoadedPass pass{std::move(row), nullptr};
    if (pass.row.snapshot_id) {
      try {
        auto graphs = parseModule(ref.trace->snapshot(*pass.row.snapshot_id).lir);
        if (graphs.empty()) throw Error("parse", "the snapshot holds no graph");
        pass.graph = std::move(graphs.front());
      } catch (const Error& e) {
        throw Error("diff",
                    "the snapshot after pass '" + pass.row.info.name + "' of compile " +
                        std::to_string(ref.compileId) + " does not parse: " + e.message(),
                    ErrorContext{.file = ref.trace->path(), .pass = pass.row.info.name});
      }
    }
    loaded.passes.push_back(std::move(pass));
  }
  return loaded;
}

// The names DimAbstraction gives the inputs: the compile's own names when it has one for
// every tensor input of the graph, else its defaults.
std::vector<std::string> inputNames(const LoadedCompile& compile, const Graph& graph) {
  std::vector<std::string> names;
  for (const CompileInput& input : compileInputs(*compile.ref.trace, compile.ref.compileId)) {
    if (input.name.empty()) return {};
    names.push_back(input.name);
  }
  size_t tensors = std::count_if(graph.inputs().begin(), graph.inputs().end(),
                                 [](const auto& v) { return v->type().isTensor(); });
  return names.size() == tensors ? names : std::vector<std::string>{};
}

// ---- nodes as findings name them

std::string resultTypes(const Node* node) {
  std::string text;
  for (size_t i = 0; i < node->numResults(); ++i)
    text += (i ? ", " : "") + node->result(i)->type().str();
  return text;
}

std::string nodeName(const Node* node) {
  return node && node->numResults() ? "%" + node->result(0)->name() : "";
}

FindingNode findingNode(const Node* a, const Node* b) {
  const Node* any = a ? a : b;
  return FindingNode{any->op(), nodeName(a), nodeName(b), a ? resultTypes(a) : "",
                     b ? resultTypes(b) : ""};
}

std::optional<FindingSource> sourceOf(const Node* node) {
  if (!node || node->loc().file.empty()) return std::nullopt;
  return FindingSource{node->loc().file, node->loc().line, node->loc().module_path};
}

std::optional<FindingSource> sourceOf(const std::vector<StackFrame>& userStack) {
  if (userStack.empty()) return std::nullopt; // innermost frame last, as Python lists them
  return FindingSource{userStack.back().file, userStack.back().line, userStack.back().function};
}

std::string where(const std::optional<FindingSource>& source) {
  return source ? " at " + source->file + ":" + std::to_string(source->line) : "";
}

// Every node's position in a walk of its graph (fused bodies included), for ranking by
// nearness to the inputs.
class Positions {
public:
  void add(const Graph& graph) {
    size_t start = index_.size();
    size_t count = 0;
    walk(graph, [&](Node& node) { index_[&node] = start + count++; });
    totals_.push_back({start, count});
  }
  double bonus(const Node* node) const {
    auto it = index_.find(node);
    if (it == index_.end()) return 0;
    for (auto [start, count] : totals_)
      if (it->second >= start && it->second < start + count)
        return kPositionBonus * (1.0 - double(it->second - start) / double(count));
    return 0;
  }

private:
  std::unordered_map<const Node*, size_t> index_;
  std::vector<std::pair<size_t, size_t>> totals_;
};

Finding makeFinding(FindingKind kind, std::string pass, std::vector<FindingNode> nodes,
                    std::optional<FindingSource> source, std::string message,
                    double positionBonus = 0, Evidence evidence = Evidence::Strong) {
  double score = baseScore(kind, evidence) + positionBonus + (source ? kSourceBonus : 0);
  return Finding{std::string(findingKindName(kind)),
                 score,
                 std::move(pass),
                 std::move(nodes),
                 std::move(source),
                 std::move(message)};
}

// ---- two graphs, the same up to shapes?

std::vector<SymExpr> dimsOf(const Value* value) {
  return value->type().isTensor() ? value->tensorType().shape : std::vector<SymExpr>{};
}

struct GraphComparison {
  NodeMatching matching;
  std::optional<DimAbstraction> dims; // absent when the graphs' inputs cannot be lined up
  std::string inputsProblem;
  // Matched pairs that still differ: a dim that follows no input, or another fused group.
  std::vector<std::pair<const Node*, const Node*>> differing;
  std::vector<std::string> differingWhy; // one per `differing` pair

  bool same() const {
    return inputsProblem.empty() && matching.onlyInA.empty() && matching.onlyInB.empty() &&
           differing.empty();
  }
};

// Why a matched pair is not the same node up to shapes, or empty when it is.
std::string pairDifference(const GraphComparison& cmp, const Node* a, const Node* b) {
  const Node* parentA = a->graph()->parentNode();
  const Node* parentB = b->graph()->parentNode();
  auto mapped = parentA ? cmp.matching.aToB.find(parentA) : cmp.matching.aToB.end();
  if ((parentA == nullptr) != (parentB == nullptr) ||
      (parentA && (mapped == cmp.matching.aToB.end() || mapped->second != parentB)))
    return "in another fused group";
  if (a->hasBody() && b->hasBody() && a->body()->numNodes() != b->body()->numNodes())
    return "fuses " + std::to_string(a->body()->numNodes()) + " nodes in A and " +
           std::to_string(b->body()->numNodes()) + " in B";
  if (a->numResults() != b->numResults()) return "has another number of results";
  for (size_t i = 0; i < a->numResults(); ++i) {
    std::vector<SymExpr> da = dimsOf(a->result(i)), db = dimsOf(b->result(i));
    if (da.size() != db.size()) return "has another rank";
    for (size_t d = 0; d < da.size(); ++d)
      if (!cmp.dims->explain({da[d], db[d]}))
        return "dim " + std::to_string(d) + " (" + da[d].str() + " vs " + db[d].str() +
               ") follows no input dim";
  }
  return {};
}

GraphComparison compareGraphs(const Graph& a, const Graph& b,
                              const std::vector<std::string>& names) {
  GraphComparison cmp{matchNodes(a, b), std::nullopt, {}, {}, {}};
  try {
    cmp.dims.emplace(std::vector<const Graph*>{&a, &b}, names);
  } catch (const Error& e) {
    cmp.inputsProblem = e.message();
    return cmp;
  }
  for (auto [na, nb] : cmp.matching.pairs) {
    std::string why = pairDifference(cmp, na, nb);
    if (why.empty()) continue;
    cmp.differing.emplace_back(na, nb);
    cmp.differingWhy.push_back(std::move(why));
  }
  return cmp;
}

// The nodes a comparison found different, A's first, and the user line of the first that has one.
std::vector<FindingNode> differingNodes(const GraphComparison& cmp,
                                        std::optional<FindingSource>& source) {
  std::vector<FindingNode> nodes;
  auto add = [&](const Node* a, const Node* b) {
    nodes.push_back(findingNode(a, b));
    if (!source) source = sourceOf(a ? a : b);
  };
  for (auto [a, b] : cmp.differing)
    add(a, b);
  for (const Node* a : cmp.matching.onlyInA)
    add(a, nullptr);
  for (const Node* b : cmp.matching.onlyInB)
    add(nullptr, b);
  return nodes;
}

std::string divergenceSummary(const GraphComparison& cmp) {
  if (!cmp.inputsProblem.empty()) return "their inputs differ (" + cmp.inputsProblem + ")";
  constexpr size_t kShown = 3; // nodes named per category; the rest are counted
  std::string text;
  auto list = [&](const std::vector<const Node*>& nodes, const std::string& what) {
    for (size_t i = 0; i < nodes.size() && i < kShown; ++i)
      text += (text.empty() ? "" : "; ") + nodeName(nodes[i]) + " " + nodes[i]->op() + " " + what;
    if (nodes.size() > kShown)
      text += "; " + std::to_string(nodes.size() - kShown) + " more " + what;
  };
  list(cmp.matching.onlyInA, "only in A");
  list(cmp.matching.onlyInB, "only in B");
  for (size_t i = 0; i < cmp.differing.size() && i < kShown; ++i)
    text += (text.empty() ? "" : "; ") + nodeName(cmp.differing[i].first) + " " +
            cmp.differing[i].first->op() + " " + cmp.differingWhy[i];
  if (cmp.differing.size() > kShown)
    text += "; " + std::to_string(cmp.differing.size() - kShown) + " more changed";
  return text;
}

void addUnmatchedNodes(const GraphComparison& cmp, const std::string& pass,
                       const Positions& positions, const std::string& how,
                       std::vector<Finding>& findings) {
  auto add = [&](const Node* node, bool inA) {
    findings.push_back(
        makeFinding(FindingKind::UnmatchedNode, pass,
                    {inA ? findingNode(node, nullptr) : findingNode(nullptr, node)}, sourceOf(node),
                    nodeName(node) + " = " + node->op() + " : " + resultTypes(node) +
                        " is only in " + (inA ? "A" : "B") + how + where(sourceOf(node)),
                    positions.bonus(node)));
  };
  // Fused groups in one graph only are fusion_diff findings.
  for (const Node* a : cmp.matching.onlyInA)
    if (!a->hasBody()) add(a, true);
  for (const Node* b : cmp.matching.onlyInB)
    if (!b->hasBody()) add(b, false);
}

// ---- sizes that scale wrongly between two compiles

// How element counts grow from A to B. With concrete inputs on both sides, the ratio of the
// counts; when one side has symbolic inputs, the growth inside that side when every symbol
// doubles (64 -> 128), so a count of degree 2 in the symbols grows x4.
class Growth {
public:
  Growth(const Graph& a, const Graph& b) {
    auto symbolic = [](const Graph& g) {
      return std::any_of(g.inputs().begin(), g.inputs().end(), [](const auto& v) {
        if (!v->type().isTensor()) return false;
        const Shape& s = v->tensorType().shape;
        return std::any_of(s.begin(), s.end(), [](const SymExpr& d) { return !d.isConstant(); });
      });
    };
    if (symbolic(b))
      symbolicSide_ = 1;
    else if (symbolic(a))
      symbolicSide_ = 0;
  }

  bool symbolic() const { return symbolicSide_ >= 0; }

  std::optional<double> of(const Value* a, const Value* b) const {
    if (!a || !b || !a->type().isTensor() || !b->type().isTensor()) return std::nullopt;
    if (!symbolic()) {
      auto na = numel(a->tensorType().shape).constant();
      auto nb = numel(b->tensorType().shape).constant();
      if (!na || !nb || *na <= 0) return std::nullopt;
      return double(*nb) / double(*na);
    }
    SymExpr count = numel((symbolicSide_ == 1 ? b : a)->tensorType().shape);
    auto at = [&](int64_t value) {
      SymbolBindings bindings;
      for (const auto& s : count.symbols())
        bindings[s] = value;
      return double(count.evaluate(bindings));
    };
    try {
      double low = at(64);
      if (low <= 0) return std::nullopt;
      return at(128) / low;
    } catch (const std::exception&) {
      return std::nullopt; // a count the symbols do not determine (an unbound atom)
    }
  }

  std::string describe(double factor) const {
    char text[32];
    std::snprintf(text, sizeof text, "x%.3g", factor);
    return symbolic() ? std::string(text) + " when the symbols double" : text;
  }

private:
  int symbolicSide_ = -1;
};

void addBroadcastBlowups(const Graph& a, const Graph& b, const NodeMatching& matching,
                         const std::string& pass, const Positions& positions,
                         std::vector<Finding>& findings) {
  Growth growth(a, b);
  double inputGrowth = 1;
  for (size_t i = 0; i < a.numInputs() && i < b.numInputs(); ++i)
    inputGrowth = std::max(inputGrowth, growth.of(a.input(i), b.input(i)).value_or(1));
  for (auto [na, nb] : matching.pairs) {
    if (na->numResults() == 0 || nb->numResults() == 0) continue;
    auto result = growth.of(na->result(0), nb->result(0));
    if (!result) continue;
    double operands = 1;
    for (size_t i = 0; i < na->numOperands() && i < nb->numOperands(); ++i)
      operands = std::max(operands, growth.of(na->operand(i), nb->operand(i)).value_or(1));
    // Tolerance for rounding in the ratios of large counts.
    if (*result <= std::max(operands, inputGrowth) * 1.01) continue;
    findings.push_back(
        makeFinding(FindingKind::BroadcastBlowup, pass, {findingNode(na, nb)}, sourceOf(na),
                    nodeName(na) + " = " + na->op() + " is " + resultTypes(na) +
                        (&a == &b ? "" : " in A and " + resultTypes(nb) + " in B") + ": it grows " +
                        growth.describe(*result) + " while its operands grow at most " +
                        growth.describe(operands) + " (a broadcast blow-up)" + where(sourceOf(na)),
                    positions.bonus(na)));
  }
}

// Whether a dim of a node's operand follows one of `inputDims`.
bool followsAny(const DimAbstraction& dims, const Value* a, const Value* b,
                const std::vector<std::string>& inputDims) {
  std::vector<SymExpr> da = dimsOf(a), db = dimsOf(b);
  for (size_t d = 0; d < da.size() && d < db.size(); ++d) {
    auto e = dims.explain({da[d], db[d]});
    if (!e) continue;
    for (const auto& symbol : e->symbols())
      if (std::find(inputDims.begin(), inputDims.end(), symbol) != inputDims.end()) return true;
  }
  return false;
}

bool hasConstantDim(const DimAbstraction& dims, const Value* a, const Value* b, int64_t c) {
  std::vector<SymExpr> da = dimsOf(a), db = dimsOf(b);
  for (size_t d = 0; d < da.size() && d < db.size(); ++d)
    if (auto e = dims.explain({da[d], db[d]}); e && e->constant() == c) return true;
  return false;
}

// A dim that stays c in both compiles where c is, in one compile, the value of an input dim
// that changes, while an operand follows that input dim and no operand has the constant c
// itself (which would make c the operand's, e.g. a weight's, and not the node's doing).
void addHardcodedDims(const DimAbstraction& dims, const NodeMatching& matching,
                      const std::string& pass, const Positions& positions,
                      std::vector<Finding>& findings) {
  for (auto [na, nb] : matching.pairs) {
    if (na->numResults() == 0 || nb->numResults() == 0) continue;
    std::vector<SymExpr> da = dimsOf(na->result(0)), db = dimsOf(nb->result(0));
    for (size_t d = 0; d < da.size() && d < db.size(); ++d) {
      auto e = dims.explain({da[d], db[d]});
      auto c = e ? e->constant() : std::nullopt;
      if (!c || *c <= 1) continue; // size-1 dims (keepdim, unsqueeze) are everywhere
      std::vector<std::string> candidates;
      for (size_t k = 0; k < dims.numCompiles(); ++k)
        for (const auto& name : dims.inputDimsEqualTo(k, *c))
          if (dims.varies(name)) candidates.push_back(name);
      if (candidates.empty()) continue;
      bool follows = false, inherited = false;
      for (size_t i = 0; i < na->numOperands() && i < nb->numOperands(); ++i) {
        if (!na->operand(i) || !nb->operand(i)) continue;
        follows |= followsAny(dims, na->operand(i), nb->operand(i), candidates);
        inherited |= hasConstantDim(dims, na->operand(i), nb->operand(i), *c);
      }
      if (!follows || inherited) continue;
      const std::string& input = candidates.front();
      auto valueIn = [&](size_t k) { return dims.dimOf(input, k).str(); };
      findings.push_back(makeFinding(
          FindingKind::HardcodedDim, pass, {findingNode(na, nb)}, sourceOf(na),
          nodeName(na) + " = " + na->op() + ": dim " + std::to_string(d) + " stays " +
              std::to_string(*c) + " (" + resultTypes(na) + " in A, " + resultTypes(nb) +
              " in B) while input dim " + input + " goes " + valueIn(0) + " -> " + valueIn(1) +
              " and its operand follows it: a size hard-coded for one input shape" +
              where(sourceOf(na)),
          positions.bonus(na)));
      break; // one finding per node
    }
  }
}

// ---- what the compiles decided

// The fusion decision that formed a group (matched by the group's member names), as
// "pass: description".
std::string fusionDecision(const LoadedCompile& compile, const Node* group) {
  std::set<std::string> members;
  for (const Node* n : group->body()->nodes())
    if (n->numResults()) members.insert(n->result(0)->name());
  members.insert(nodeName(group).substr(1));
  std::map<int64_t, std::string> passNames;
  for (const auto& p : compile.passes)
    passNames[p.row.id] = p.row.info.name;
  for (const DecisionRow& d : compile.ref.trace->decisions(compile.ref.compileId)) {
    if (d.decision.kind != "fusion") continue;
    for (const auto& name : d.decision.nodes)
      if (members.count(name)) {
        const std::string& pass = passNames[d.pass_id];
        const std::string& why = d.decision.description;
        return why.rfind(pass + ":", 0) == 0 ? why : pass + ": " + why;
      }
  }
  return "no fusion decision recorded";
}

std::string memberOps(const Node* group) {
  std::string text;
  for (const Node* n : group->body()->nodes())
    text += (text.empty() ? "" : ", ") + n->op();
  return text;
}

void addFusionDiffs(const LoadedCompile& A, const LoadedCompile& B, const Graph& a, const Graph& b,
                    const GraphComparison& cmp, const Positions& positions,
                    std::vector<Finding>& findings) {
  auto add = [&](const Node* na, const Node* nb, std::string message) {
    const Node* any = na ? na : nb;
    const Node* first = any->body()->numNodes() ? any->body()->nodes().front() : any;
    std::string pass = na ? fusionDecision(A, na) : fusionDecision(B, nb);
    findings.push_back(makeFinding(FindingKind::FusionDiff, pass.substr(0, pass.find(':')),
                                   {findingNode(na, nb)}, sourceOf(first), std::move(message),
                                   positions.bonus(any)));
  };
  for (auto [na, nb] : cmp.matching.pairs) {
    if (!na->hasBody() || !nb->hasBody() || na->graph() != &a || nb->graph() != &b) continue;
    if (memberOps(na) == memberOps(nb)) continue;
    add(na, nb,
        "fused group " + nodeName(na) + " holds [" + memberOps(na) + "] in A (" +
            fusionDecision(A, na) + ") and " + nodeName(nb) + " holds [" + memberOps(nb) +
            "] in B (" + fusionDecision(B, nb) + ")");
  }
  for (const Node* na : cmp.matching.onlyInA)
    if (na->hasBody())
      add(na, nullptr,
          "fused group " + nodeName(na) + " [" + memberOps(na) + "] is only in A (" +
              fusionDecision(A, na) + ")");
  for (const Node* nb : cmp.matching.onlyInB)
    if (nb->hasBody())
      add(nullptr, nb,
          "fused group " + nodeName(nb) + " [" + memberOps(nb) + "] is only in B (" +
              fusionDecision(B, nb) + ")");
}

std::optional<std::string> kernelOf(const Node* node) {
  const Attribute* kernel = node->attrs().find("kernel");
  const auto* name = kernel ? std::get_if<std::string>(kernel) : nullptr;
  return name ? std::optional<std::string>(*name) : std::nullopt;
}

std::map<std::string, KernelRecord> kernelsByName(const LoadedCompile& compile) {
  std::map<std::string, KernelRecord> kernels;
  for (KernelRecord& k : compile.ref.trace->kernels(compile.ref.compileId))
    kernels.emplace(k.name, std::move(k));
  return kernels;
}

// Kernels pair up through the nodes they run (each node names its kernel in `kernel`).
void addKernelDiffs(const LoadedCompile& A, const LoadedCompile& B, const NodeMatching& matching,
                    const std::string& pass, std::vector<Finding>& findings) {
  std::map<std::string, KernelRecord> kernelsA = kernelsByName(A), kernelsB = kernelsByName(B);
  for (auto [na, nb] : matching.pairs) {
    auto nameA = kernelOf(na), nameB = kernelOf(nb);
    if (!nameA || !nameB || !kernelsA.count(*nameA) || !kernelsB.count(*nameB)) continue;
    const KernelRecord& ka = kernelsA.at(*nameA);
    const KernelRecord& kb = kernelsB.at(*nameB);
    if (ka.kind == kb.kind && ka.target == kb.target && ka.op_summary == kb.op_summary) continue;
    auto describe = [](const KernelRecord& k) {
      return k.name + " " + k.kind + " on " + k.target + " (" + k.op_summary + "; " + k.reason +
             ")";
    };
    findings.push_back(makeFinding(FindingKind::KernelDiff, pass, {findingNode(na, nb)},
                                   sourceOf(na),
                                   nodeName(na) + " runs as kernel " + describe(ka) +
                                       " in A but as " + describe(kb) + " in B"));
  }
}

std::map<std::string, int64_t> inputBuffers(const LoadedCompile& compile) {
  std::map<std::string, int64_t> sizes;
  for (const BufferRecord& buffer : compile.ref.trace->buffers(compile.ref.compileId))
    if (buffer.is_graph_input && buffer.size_bytes > 0) sizes[buffer.name] = buffer.size_bytes;
  return sizes;
}

// A peak that grows more than 25% faster than the fastest-growing input (weights do not grow
// with the batch, so the total of the inputs would hide a blow-up). A peak growing slower is
// no problem and is not reported.
void addMemoryDiff(const LoadedCompile& A, const LoadedCompile& B, std::vector<Finding>& findings) {
  auto planA = A.ref.trace->memoryPlan(A.ref.compileId);
  auto planB = B.ref.trace->memoryPlan(B.ref.compileId);
  if (!planA || !planB || planA->peak_bytes <= 0 || planB->peak_bytes <= 0) return;
  std::map<std::string, int64_t> inA = inputBuffers(A), inB = inputBuffers(B);
  double inputRatio = 0;
  std::string fastest;
  for (const auto& [name, size] : inA) {
    auto it = inB.find(name);
    if (it == inB.end() || double(it->second) / double(size) <= inputRatio) continue;
    inputRatio = double(it->second) / double(size);
    fastest = name;
  }
  if (fastest.empty()) return; // symbolic or unnamed inputs: nothing to compare with
  double peakRatio = double(planB->peak_bytes) / double(planA->peak_bytes);
  if (peakRatio <= inputRatio * 1.25) return;
  char text[240];
  std::snprintf(text, sizeof text,
                "peak memory grows x%.3g (%lld -> %lld bytes) while the fastest-growing input, "
                "%s, grows x%.3g",
                peakRatio, static_cast<long long>(planA->peak_bytes),
                static_cast<long long>(planB->peak_bytes), fastest.c_str(), inputRatio);
  findings.push_back(makeFinding(FindingKind::MemoryDiff, "", {}, std::nullopt, text));
}

// ---- what Dynamo recorded around the compiles

std::map<std::string, GraphBreakRecord> breaksOf(const LoadedCompile& compile) {
  std::map<std::string, GraphBreakRecord> breaks;
  for (GraphBreakRecord& gb : compile.ref.trace->graphBreaks(compile.row.run_id)) {
    if (gb.compile_id != compile.ref.compileId) continue;
    std::string key = gb.reason + where(sourceOf(gb.user_stack));
    breaks.emplace(std::move(key), std::move(gb));
  }
  return breaks;
}

void addGraphBreaks(const LoadedCompile& A, const LoadedCompile& B,
                    std::vector<Finding>& findings) {
  auto breaksA = breaksOf(A), breaksB = breaksOf(B);
  auto addOnly = [&](const auto& mine, const auto& theirs, const char* side) {
    for (const auto& [key, gb] : mine)
      if (!theirs.count(key)) {
        // Dynamo's reasons run to several lines of hints; the first says what broke.
        std::string reason = gb.reason.substr(0, gb.reason.find('\n'));
        findings.push_back(makeFinding(FindingKind::GraphBreak, "", {}, sourceOf(gb.user_stack),
                                       std::string("graph break only in ") + side + ": " + reason +
                                           where(sourceOf(gb.user_stack))));
      }
  };
  addOnly(breaksA, breaksB, "A");
  addOnly(breaksB, breaksA, "B");
}

void addFailedGuards(const LoadedCompile& A, const LoadedCompile& B,
                     std::vector<Finding>& findings) {
  std::vector<GuardRecord> guardsA = A.ref.trace->guards(A.ref.compileId);
  auto add = [&](const std::string& expr, const std::string& reason) {
    // The recompile record names the guard as "KIND: expr" when the capture identified it.
    auto guard = std::find_if(guardsA.begin(), guardsA.end(), [&](const GuardRecord& g) {
      return g.expr == expr || g.kind + ": " + g.expr == expr;
    });
    // A tensor's size check failing is the ordinary recompile on a new input shape: the line
    // Dynamo attributes it to (the first use of the tensor) explains nothing, so it is left
    // out, and the finding is weak evidence. A guard that a line of the program added ranks
    // high, with that line.
    bool sizeCheck = expr.starts_with("TENSOR_MATCH") ||
                     (guard != guardsA.end() && guard->kind == "TENSOR_MATCH");
    auto source = guard == guardsA.end() || sizeCheck ? std::nullopt : sourceOf(guard->user_stack);
    findings.push_back(makeFinding(FindingKind::FailedGuard, "", {}, source,
                                   "B recompiled because guard `" + expr + "`" +
                                       (guard == guardsA.end() ? "" : " (" + guard->kind + ")") +
                                       " failed" +
                                       (reason.empty() || reason == expr ? "" : ": " + reason) +
                                       (source ? ", set by the line" + where(source) : ""),
                                   0, source ? Evidence::Strong : Evidence::Weak));
  };
  std::vector<RecompileRecord> recompiles = B.ref.trace->recompiles(B.ref.compileId);
  // B was checked against every cached entry of its frame; the rejection by A is the one that
  // explains the pair, when it was recorded.
  const std::string& keyA = A.row.info.compile_key;
  if (std::any_of(recompiles.begin(), recompiles.end(),
                  [&](const RecompileRecord& r) { return r.previous_compile_key == keyA; }))
    std::erase_if(recompiles,
                  [&](const RecompileRecord& r) { return r.previous_compile_key != keyA; });
  for (const RecompileRecord& r : recompiles)
    add(r.failed_guard.value_or(r.reason), r.reason);
  if (!recompiles.empty()) return;
  for (const GuardRecord& g : guardsA)
    if (g.failed) add(g.expr, "");
}

void rank(std::vector<Finding>& findings) {
  std::stable_sort(findings.begin(), findings.end(),
                   [](const Finding& x, const Finding& y) { return x.score > y.score; });
}

bool onlyGuards(const std::vector<Finding>& findings) {
  return std::all_of(findings.begin(), findings.end(), [](const Finding& f) {
    return f.kind == findingKindName(FindingKind::FailedGuard);
  });
}

DiffReport aroundPass(const CompileRef& ref, const std::string& passName) {
  LoadedCompile compile = load(ref);
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
  const Graph& before = *std::prev(it)->graph;
  const Graph& after = *it->graph;
  DiffReport report{ref,
                    ref,
                    describeCompile(*ref.trace, ref.compileId) + " before " + passName,
                    "after " + passName,
                    false,
                    {}};
  GraphComparison cmp = compareGraphs(before, after, {});
  Positions positions;
  positions.add(before);
  positions.add(after);
  addUnmatchedNodes(cmp, passName, positions, " (A: before " + passName + ", B: after)",
                    report.findings);
  addFusionDiffs(compile, compile, before, after, cmp, positions, report.findings);
  rank(report.findings);
  report.same = report.findings.empty();
  return report;
}

} // namespace

DiffReport diffCompiles(const CompileRef& a, const CompileRef& b, const DiffOptions& options) {
  if (!options.aroundPass.empty()) return aroundPass(a, options.aroundPass);
  LoadedCompile A = load(a), B = load(b);
  DiffReport report{
      a,     b, describeCompile(*a.trace, a.compileId), describeCompile(*b.trace, b.compileId),
      false, {}};
  std::vector<Finding>& findings = report.findings;

  // Walk the pipelines while both recorded the same passes and left graphs.
  size_t common = 0;
  std::optional<GraphComparison> divergence;
  std::string divergentPass;
  std::vector<std::string> names;
  for (; common < A.passes.size() && common < B.passes.size(); ++common) {
    const LoadedPass& pa = A.passes[common];
    const LoadedPass& pb = B.passes[common];
    if (pa.row.info.name != pb.row.info.name) {
      findings.push_back(
          makeFinding(FindingKind::FirstDivergentPass, pa.row.info.name, {}, std::nullopt,
                      "the pipelines differ at pass #" + std::to_string(common) + ": " +
                          pa.row.info.name + " in A, " + pb.row.info.name + " in B"));
      break;
    }
    if (!pa.graph || !pb.graph) {
      const LoadedPass& failed = pa.graph ? pb : pa;
      findings.push_back(
          makeFinding(FindingKind::FirstDivergentPass, pa.row.info.name, {}, std::nullopt,
                      "pass " + pa.row.info.name + " failed in " + (pa.graph ? "B" : "A") + ": " +
                          failed.row.info.error_message.value_or("no error recorded")));
      break;
    }
    if (common == 0) names = inputNames(A, *pa.graph);
    GraphComparison cmp = compareGraphs(*pa.graph, *pb.graph, names);
    if (!cmp.same()) {
      divergence = std::move(cmp);
      divergentPass = pa.row.info.name;
      break;
    }
  }
  size_t lastCommon = divergence ? common : common - (common > 0);
  bool haveGraphs = common > 0 || divergence;

  if (divergence) {
    Positions positions;
    positions.add(*A.passes[common].graph);
    positions.add(*B.passes[common].graph);
    std::optional<FindingSource> source;
    std::vector<FindingNode> nodes = differingNodes(*divergence, source);
    bool frontend = common == 0;
    // A divergence already in the frontend graphs is a symptom: the failed guard or the graph
    // break that made Dynamo trace differently names the cause, so it is weak evidence.
    findings.push_back(makeFinding(
        FindingKind::FirstDivergentPass, divergentPass, nodes, source,
        "after pass " + divergentPass +
            " the graphs differ beyond shapes: " + divergenceSummary(*divergence) +
            (frontend ? " (already in the first snapshot: Dynamo/aot_autograd traced different "
                        "graphs)"
                      : ""),
        0, frontend ? Evidence::Weak : Evidence::Strong));
    addUnmatchedNodes(*divergence, divergentPass, positions, "", findings);
  }

  // The frontend graphs: sizes that scale wrongly come from the user's program.
  if (haveGraphs && A.passes[0].graph && B.passes[0].graph) {
    const Graph& ga = *A.passes[0].graph;
    const Graph& gb = *B.passes[0].graph;
    GraphComparison cmp = compareGraphs(ga, gb, names);
    Positions positions;
    positions.add(ga);
    const std::string& pass = A.passes[0].row.info.name;
    addBroadcastBlowups(ga, gb, cmp.matching, pass, positions, findings);
    if (cmp.dims) addHardcodedDims(*cmp.dims, cmp.matching, pass, positions, findings);
  }

  // The last graphs both compiles share: fusion and kernels.
  if (haveGraphs && A.passes[lastCommon].graph && B.passes[lastCommon].graph) {
    const Graph& ga = *A.passes[lastCommon].graph;
    const Graph& gb = *B.passes[lastCommon].graph;
    GraphComparison cmp = compareGraphs(ga, gb, names);
    Positions positions;
    positions.add(ga);
    positions.add(gb);
    addFusionDiffs(A, B, ga, gb, cmp, positions, findings);
    addKernelDiffs(A, B, cmp.matching, A.passes[lastCommon].row.info.name, findings);
  }
  addMemoryDiff(A, B, findings);
  addGraphBreaks(A, B, findings);
  addFailedGuards(A, B, findings);

  rank(findings);
  report.same = onlyGuards(findings);
  return report;
}

std::vector<Finding> scalingAnalysis(const std::vector<CompileRef>& compiles) {
  std::vector<LoadedCompile> loaded;
  std::vector<const Graph*> graphs;
  for (const CompileRef& ref : compiles) {
    loaded.push_back(load(ref));
    const LoadedCompile& c = loaded.back();
    if (c.passes.empty() || !c.passes.front().graph)
      throw Error("diff", "compile " + std::to_string(ref.compileId) + " has no recorded graph",
                  ErrorContext{.file = ref.trace->path()});
    graphs.push_back(c.passes.front().graph.get());
  }
  if (graphs.empty()) return {};
  const Graph& first = *graphs.front();
  DimAbstraction dims(graphs, inputNames(loaded.front(), first));
  // Each node of the first compile with its counterpart in every other compile.
  std::vector<NodeMatching> matchings;
  for (size_t k = 1; k < graphs.size(); ++k)
    matchings.push_back(matchNodes(first, *graphs[k]));
  Positions positions;
  positions.add(first);
  const std::string& pass = loaded.front().passes.front().row.info.name;

  std::vector<Finding> findings;
  // One compile with symbolic shapes: its sizes are already functions of the inputs, and a
  // count of higher degree than its operands' is a broadcast blow-up.
  if (graphs.size() == 1)
    addBroadcastBlowups(first, first, matchNodes(first, first), pass, positions, findings);
  std::set<const Value*> nonlinear; // reported values: their users inherit the growth
  walk(first, [&](Node& node) {
    if (node.numResults() == 0 || !node.result(0)->type().isTensor()) return;
    if (std::any_of(node.operands().begin(), node.operands().end(),
                    [&](const Value* v) { return v && nonlinear.count(v); }))
      return;
    std::vector<const Node*> counterparts{&node};
    for (const NodeMatching& m : matchings) {
      auto it = m.aToB.find(&node);
      if (it == m.aToB.end()) return;
      counterparts.push_back(it->second);
    }
    const size_t rank = node.result(0)->tensorType().rank();
    for (size_t d = 0; d < rank; ++d) {
      std::vector<SymExpr> values;
      std::string shown;
      for (const Node* n : counterparts) {
        std::vector<SymExpr> shape = dimsOf(n->result(0));
        if (shape.size() != rank) return;
        values.push_back(shape[d]);
        shown += (shown.empty() ? "" : ", ") + shape[d].str();
      }
      std::optional<DimFit> fit = fitDim(dims, values);
      if (!fit || fit->linear()) continue;
      std::string inputs;
      for (const auto& name : fit->nonlinearIn)
        inputs += (inputs.empty() ? "" : ", ") + name;
      nonlinear.insert(node.result(0));
      findings.push_back(makeFinding(FindingKind::NonlinearDim, pass,
                                     {findingNode(&node, counterparts.back())}, sourceOf(&node),
                                     nodeName(&node) + " = " + node.op() + ": dim " +
                                         std::to_string(d) + " = " + fit->expr.str() +
                                         " is not linear in " + inputs + " (" + shown + ")" +
                                         where(sourceOf(&node)),
                                     positions.bonus(&node)));
      return;
    }
  });
  rank(findings);
  return findings;
}

} // namespace loupe::diff
