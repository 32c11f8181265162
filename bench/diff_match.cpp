// Benchmark of the differ's node matcher (inspector/diff/node_matcher.h): two random graphs of
// the same "program" (25 identical layers of 400 nodes, 10,000 nodes in all) at batch 8 and 16,
// the second with nodes inserted, deleted and swapped with an independent neighbour. Prints the
// median time of matchNodes and how well it matched against the known truth.
//
//   ninja -C build diff_match_bench && build/bench/diff_match_bench [seed]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>

#include "compiler/ir/graph.h"
#include "inspector/diff/node_matcher.h"

using namespace loupe;

namespace {

constexpr int kLayers = 25;
constexpr int kNodesPerLayer = 400;
constexpr int kEdits = 30; // of each kind: insertions, deletions, swaps

// One operation of the program; operands are op ids, or -1 - k for graph input k.
struct OpSpec {
  int id;
  std::string op;
  int line;
  std::string module;
  std::vector<int> operands;
};

std::vector<OpSpec> generateProgram(std::mt19937& rng, bool modulePaths) {
  const char* unary[] = {"aten.relu", "aten.exp", "aten.neg", "aten.tanh", "aten.sigmoid"};
  const char* binary[] = {"aten.add.Tensor", "aten.mul.Tensor", "aten.sub.Tensor"};
  // The layer template: op kind, source line, operand offsets back from the node (0: the
  // layer's input).
  struct Step {
    std::string op;
    int line;
    std::vector<int> back;
  };
  std::vector<Step> layer;
  for (int i = 0; i < kNodesPerLayer; ++i) {
    bool isBinary = i > 1 && rng() % 3 == 0;
    auto pick = [&] { return 1 + static_cast<int>(rng() % std::min(i + 1, 8)); };
    Step step{isBinary ? binary[rng() % 3] : unary[rng() % 5], 10 + i, {pick()}};
    if (isBinary) step.back.push_back(pick());
    layer.push_back(step);
  }
  std::vector<OpSpec> program;
  int layerInput = -1; // graph input 0
  for (int l = 0; l < kLayers; ++l) {
    int first = static_cast<int>(program.size());
    for (int i = 0; i < kNodesPerLayer; ++i) {
      OpSpec spec{static_cast<int>(program.size()),
                  layer[i].op,
                  layer[i].line,
                  modulePaths ? "layers." + std::to_string(l) : "",
                  {}};
      for (int back : layer[i].back)
        spec.operands.push_back(i - back < 0 ? layerInput : first + i - back);
      program.push_back(spec);
    }
    layerInput = static_cast<int>(program.size()) - 1;
  }
  return program;
}

// Applies the edits; new ops get ids from `nextId` on, so they have no counterpart.
void edit(std::vector<OpSpec>& program, std::mt19937& rng) {
  int nextId = static_cast<int>(program.size()) + 1000000;
  for (int e = 0; e < kEdits; ++e) {
    // Deletion: users of the op read its first operand instead.
    size_t at = 1 + rng() % (program.size() - 2);
    int gone = program[at].id, replacement = program[at].operands[0];
    program.erase(program.begin() + static_cast<long>(at));
    for (OpSpec& spec : program)
      std::replace(spec.operands.begin(), spec.operands.end(), gone, replacement);
  }
  for (int e = 0; e < kEdits; ++e) {
    // Insertion: a new op after `at` that the next op reads instead of `at`'s result.
    size_t at = rng() % (program.size() - 1);
    OpSpec inserted{nextId++, "aten.abs", 5, program[at].module, {program[at].id}};
    std::replace(program[at + 1].operands.begin(), program[at + 1].operands.end(), program[at].id,
                 inserted.id);
    program.insert(program.begin() + static_cast<long>(at) + 1, inserted);
  }
  for (int e = 0; e < kEdits; ++e) {
    // Swap with the next op when that one does not read this one.
    size_t at = rng() % (program.size() - 1);
    const auto& next = program[at + 1].operands;
    if (std::find(next.begin(), next.end(), program[at].id) == next.end())
      std::swap(program[at], program[at + 1]);
  }
}

std::unique_ptr<Graph> build(const std::vector<OpSpec>& program, int batch, const std::string& tag,
                             std::map<const Node*, int>& idOf) {
  auto graph = std::make_unique<Graph>("forward");
  TensorType type;
  type.dtype = DType::F32;
  type.shape = {batch, 64};
  Value* input = graph->addInput(type, "x_" + tag);
  std::map<int, Value*> valueOf;
  for (const OpSpec& spec : program) {
    std::vector<Value*> operands;
    for (int id : spec.operands)
      operands.push_back(id < 0 ? input : valueOf.at(id));
    Node* node = graph->createNode(spec.op, operands, {type}, {},
                                   SourceLoc{"model.py", spec.line, spec.module});
    node->result()->setName(tag + std::to_string(spec.id));
    valueOf[spec.id] = node->result();
    idOf[node] = spec.id;
  }
  graph->setOutputs({valueOf.at(program.back().id)});
  return graph;
}

// Matches the program at two shapes after edits; returns the number of wrong pairs.
int measure(unsigned seed, bool modulePaths) {
  std::mt19937 rng(seed);
  std::vector<OpSpec> program = generateProgram(rng, modulePaths);
  std::vector<OpSpec> edited = program;
  edit(edited, rng);
  std::map<const Node*, int> idOf;
  auto a = build(program, 8, "a", idOf);
  auto b = build(edited, 16, "b", idOf);

  std::vector<double> seconds;
  diff::NodeMatching matching;
  for (int run = 0; run < 5; ++run) {
    auto start = std::chrono::steady_clock::now();
    matching = diff::matchNodes(*a, *b);
    seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(seconds.begin(), seconds.end());

  // The truth: nodes of one op id correspond; every other node is only in its graph.
  std::map<int, const Node*> inB;
  for (const Node* node : b->nodes())
    inB[idOf.at(node)] = node;
  int shouldPair = 0, right = 0, wrong = 0, missed = 0;
  for (const Node* node : a->nodes()) {
    auto truth = inB.find(idOf.at(node));
    auto found = matching.aToB.find(node);
    if (truth != inB.end()) ++shouldPair;
    if (found == matching.aToB.end())
      missed += truth != inB.end();
    else if (truth != inB.end() && truth->second == found->second)
      ++right;
    else
      ++wrong;
  }
  std::printf("%s: %zu and %zu nodes, %d layers, %d insertions, deletions and swaps tried\n",
              modulePaths ? "layers with module paths" : "layers sharing one location",
              a->numNodes(), b->numNodes(), kLayers, kEdits);
  std::printf("  matchNodes: %.1f ms (median of %zu runs)\n", seconds[seconds.size() / 2] * 1e3,
              seconds.size());
  std::printf("  pairs %zu: right %d of %d (%.2f%%), wrong %d, missed %d; only in A %zu, only in "
              "B %zu\n",
              matching.pairs.size(), right, shouldPair, 100.0 * right / shouldPair, wrong, missed,
              matching.onlyInA.size(), matching.onlyInB.size());
  return wrong;
}

} // namespace

int main(int argc, char** argv) {
  unsigned seed = argc > 1 ? static_cast<unsigned>(std::atoi(argv[1])) : 1u;
  int wrong = measure(seed, true) + measure(seed, false);
  return wrong == 0 ? 0 : 1;
}
