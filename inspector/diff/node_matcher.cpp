// Node matching in four stages (docs/differ.md, "Matching"):
//   1. every node gets a label (op + source location) and two structural hashes: bottom-up
//      (label and operands, graph inputs by tensor ordinal) and top-down (label and users);
//   2. a hash that occurs once in each graph pairs its two nodes (anchors);
//   3. pairs spread to operands in the same slot and to users that are the only unmatched
//      user of that label in that slot;
//   4. what is left is paired by its matched neighbours, then by position relative to the
//      matched nodes around it, within each label.
// Fused groups pair when their bodies share most of their labels; the bodies of paired
// groups are matched the same way, recursively.
#include "inspector/diff/node_matcher.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <map>
#include <string>

namespace loupe::diff {
namespace {

uint64_t mix(uint64_t x) {
  // splitmix64's finaliser: a cheap bijection that spreads every input bit.
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t combine(uint64_t seed, uint64_t value) {
  return mix(seed ^ (value + 0x632be59bd9b4e019ULL + (seed << 6) + (seed >> 2)));
}

bool isFused(const Node& node) {
  return node.hasBody();
}

// Labels are interned so that both graphs compare them as integers.
class LabelTable {
public:
  int intern(const Node& node) {
    const SourceLoc& loc = node.loc();
    std::string key =
        node.op() + '\0' + loc.file + '\0' + std::to_string(loc.line) + '\0' + loc.module_path;
    return ids_.emplace(std::move(key), static_cast<int>(ids_.size())).first->second;
  }

private:
  std::unordered_map<std::string, int> ids_;
};

// What the matcher knows of one graph's top-level nodes, indexed by position.
struct GraphIndex {
  std::vector<const Node*> nodes;
  std::unordered_map<const Node*, int> position;
  std::vector<int> label;
  std::vector<std::vector<int>> bodyLabels; // sorted; fused groups only
  std::vector<uint64_t> bottomUp, topDown;
  std::vector<int> tensorOrdinal; // per graph input; -1 for index inputs
  std::vector<int> partner;       // position in the other graph, -1 while unmatched

  GraphIndex(const Graph& graph, LabelTable& labels) {
    for (Node* node : graph.nodes()) {
      position.emplace(node, static_cast<int>(nodes.size()));
      nodes.push_back(node);
    }
    int ordinal = 0;
    for (const auto& input : graph.inputs())
      tensorOrdinal.push_back(input->type().isTensor() ? ordinal++ : -1);
    size_t n = nodes.size();
    label.resize(n);
    bodyLabels.resize(n);
    for (size_t i = 0; i < n; ++i) {
      label[i] = labels.intern(*nodes[i]);
      if (!isFused(*nodes[i])) continue;
      for (Node* member : nodes[i]->body()->nodes())
        bodyLabels[i].push_back(labels.intern(*member));
      std::sort(bodyLabels[i].begin(), bodyLabels[i].end());
    }
    partner.assign(n, -1);
    hashBottomUp();
    hashTopDown(graph);
  }

  // Which node (position) defines a value, or -1 for graph inputs and absent operands.
  int definer(const Value* value) const {
    if (!value || !value->definingNode()) return -1;
    return position.at(value->definingNode());
  }

private:
  uint64_t labelHash(size_t i) const {
    uint64_t h = mix(static_cast<uint64_t>(label[i]));
    for (int member : bodyLabels[i])
      h = combine(h, static_cast<uint64_t>(member));
    return h;
  }

  void hashBottomUp() {
    bottomUp.resize(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) {
      uint64_t h = labelHash(i);
      for (const Value* operand : nodes[i]->operands()) {
        if (!operand) {
          h = combine(h, 1);
        } else if (int d = definer(operand); d >= 0) {
          h = combine(combine(h, bottomUp[d]), operand->index());
        } else {
          // Index inputs (symbolic sizes) exist only in dynamic compiles: all alike.
          int ordinal = tensorOrdinal.at(operand->index());
          h = combine(h, ordinal < 0 ? 2 : mix(3 + static_cast<uint64_t>(ordinal)));
        }
      }
      bottomUp[i] = h;
    }
  }

  // Users are an unordered set, so their contributions are summed; each carries the slot the
  // value fills in the user and which result of this node it is.
  void hashTopDown(const Graph& graph) {
    std::vector<uint64_t> usesSum(nodes.size(), 0);
    const auto& outputs = graph.outputs();
    for (size_t k = 0; k < outputs.size(); ++k)
      if (int d = definer(outputs[k]); d >= 0)
        usesSum[d] += mix(combine(combine(7, k), outputs[k]->index()));
    topDown.resize(nodes.size());
    for (size_t i = nodes.size(); i-- > 0;) {
      topDown[i] = combine(labelHash(i), usesSum[i]);
      const auto& operands = nodes[i]->operands();
      for (size_t slot = 0; slot < operands.size(); ++slot)
        if (int d = definer(operands[slot]); d >= 0)
          usesSum[d] += mix(combine(combine(topDown[i], slot), operands[slot]->index()));
    }
  }
};

class GraphMatcher {
public:
  GraphMatcher(const Graph& a, const Graph& b, LabelTable& labels)
      : a_(a, labels), b_(b, labels), graphA_(a), graphB_(b) {}

  void run() {
    anchor(a_.bottomUp, b_.bottomUp);
    anchor(a_.topDown, b_.topDown);
    seedFromInputs();
    propagate();
    matchByNeighbours();
    propagate();
    matchByPosition();
    propagate();
  }

  const GraphIndex& a() const { return a_; }
  const GraphIndex& b() const { return b_; }

private:
  // Fused groups pair when their bodies share at least half their labels (Dice coefficient),
  // so a group that a pass grew or shrank by a member still pairs with its counterpart.
  bool compatible(int i, int j) const {
    if (a_.label[i] != b_.label[j]) return false;
    const auto& x = a_.bodyLabels[i];
    const auto& y = b_.bodyLabels[j];
    if (x.empty() && y.empty()) return true;
    std::vector<int> common;
    std::set_intersection(x.begin(), x.end(), y.begin(), y.end(), std::back_inserter(common));
    return 4 * common.size() >= x.size() + y.size();
  }

  bool pair(int i, int j) {
    if (i < 0 || j < 0 || a_.partner[i] >= 0 || b_.partner[j] >= 0 || !compatible(i, j))
      return false;
    a_.partner[i] = j;
    b_.partner[j] = i;
    queue_.emplace_back(i, j);
    return true;
  }

  void anchor(const std::vector<uint64_t>& hashA, const std::vector<uint64_t>& hashB) {
    std::unordered_map<uint64_t, std::pair<int, int>> seenA, seenB; // hash -> (count, position)
    auto count = [](const std::vector<uint64_t>& hashes, auto& seen) {
      for (size_t i = 0; i < hashes.size(); ++i) {
        auto& [n, at] = seen[hashes[i]];
        ++n;
        at = static_cast<int>(i);
      }
    };
    count(hashA, seenA);
    count(hashB, seenB);
    for (const auto& [hash, inA] : seenA) {
      auto it = seenB.find(hash);
      if (inA.first == 1 && it != seenB.end() && it->second.first == 1)
        pair(inA.second, it->second.second);
    }
  }

  // Graph inputs pair by tensor ordinal; their users spread like those of a matched node.
  void seedFromInputs() {
    std::vector<const Value*> inputsB;
    for (const auto& input : graphB_.inputs())
      if (input->type().isTensor()) inputsB.push_back(input.get());
    size_t k = 0;
    for (const auto& input : graphA_.inputs()) {
      if (!input->type().isTensor()) continue;
      if (k < inputsB.size()) pairUsers(*input, *inputsB[k]);
      ++k;
    }
  }

  // The unmatched users of two corresponding values pair when each is the only unmatched user
  // with its label in its operand slot.
  void pairUsers(const Value& va, const Value& vb) {
    using Key = std::pair<int, size_t>; // label, slot
    auto candidates = [](const Value& value, const GraphIndex& index) {
      std::map<Key, std::vector<int>> byKey;
      for (const Node* user : value.users()) {
        int u = index.position.at(user);
        if (index.partner[u] >= 0) continue;
        const auto& operands = user->operands();
        for (size_t slot = 0; slot < operands.size(); ++slot) {
          if (operands[slot] != &value) continue;
          auto& list = byKey[{index.label[u], slot}];
          if (list.empty() || list.back() != u) list.push_back(u);
        }
      }
      return byKey;
    };
    auto usersA = candidates(va, a_);
    auto usersB = candidates(vb, b_);
    for (const auto& [key, list] : usersA) {
      auto it = usersB.find(key);
      if (list.size() == 1 && it != usersB.end() && it->second.size() == 1)
        pair(list[0], it->second[0]);
    }
  }

  void propagate() {
    while (!queue_.empty()) {
      auto [i, j] = queue_.front();
      queue_.pop_front();
      const Node& na = *a_.nodes[i];
      const Node& nb = *b_.nodes[j];
      size_t slots = std::min(na.numOperands(), nb.numOperands());
      for (size_t s = 0; s < slots; ++s) {
        const Value* oa = na.operand(s);
        const Value* ob = nb.operand(s);
        if (oa && ob && oa->index() == ob->index()) pair(a_.definer(oa), b_.definer(ob));
      }
      size_t results = std::min(na.numResults(), nb.numResults());
      for (size_t r = 0; r < results; ++r)
        pairUsers(*na.result(r), *nb.result(r));
    }
  }

  // A node's operands, as seen from graph B: the partner of each defining node, or the input's
  // tensor ordinal. Empty when an operand's definer is still unmatched.
  std::vector<int64_t> neighbourKey(const GraphIndex& index, int i, bool translate) const {
    std::vector<int64_t> key{index.label[i]};
    for (const Value* operand : index.nodes[i]->operands()) {
      int d = index.definer(operand);
      if (d >= 0) {
        int inB = translate ? index.partner[d] : d;
        if (inB < 0) return {};
        key.push_back(inB + 1);
      } else {
        key.push_back(operand ? -2 - index.tensorOrdinal.at(operand->index()) : 0);
      }
      key.push_back(operand ? static_cast<int64_t>(operand->index()) : 0);
    }
    return key;
  }

  void matchByNeighbours() {
    std::map<std::vector<int64_t>, std::pair<int, int>> inA, inB; // key -> (count, position)
    auto collect = [this](const GraphIndex& index, bool translate, auto& out) {
      for (size_t i = 0; i < index.nodes.size(); ++i) {
        if (index.partner[i] >= 0) continue;
        auto key = neighbourKey(index, static_cast<int>(i), translate);
        if (key.size() < 3) continue; // unresolved, or no operands to tell duplicates apart
        auto& [n, at] = out[std::move(key)];
        ++n;
        at = static_cast<int>(i);
      }
    };
    collect(a_, true, inA);
    collect(b_, false, inB);
    for (const auto& [key, fromA] : inA) {
      auto it = inB.find(key);
      if (fromA.first == 1 && it != inB.end() && it->second.first == 1)
        pair(fromA.second, it->second.second);
    }
  }

  // The rest pairs within each label in order, each A node placed where B would have it: at
  // its offset from the nearest matched node before it. A pair is accepted only when the two
  // places are close, so an inserted node does not pull its neighbours out of line.
  void matchByPosition() {
    constexpr double kWindow = 32;
    std::vector<double> expected(a_.nodes.size());
    int lastA = -1, lastB = -1;
    for (size_t i = 0; i < a_.nodes.size(); ++i) {
      if (a_.partner[i] >= 0) {
        lastA = static_cast<int>(i);
        lastB = a_.partner[i];
      }
      expected[i] = lastB + static_cast<double>(static_cast<int>(i) - lastA);
    }
    std::unordered_map<int, std::vector<int>> bucketA, bucketB;
    for (size_t i = 0; i < a_.nodes.size(); ++i)
      if (a_.partner[i] < 0) bucketA[a_.label[i]].push_back(static_cast<int>(i));
    for (size_t j = 0; j < b_.nodes.size(); ++j)
      if (b_.partner[j] < 0) bucketB[b_.label[j]].push_back(static_cast<int>(j));
    for (auto& [label, listA] : bucketA) {
      auto it = bucketB.find(label);
      if (it == bucketB.end()) continue;
      const auto& listB = it->second;
      size_t x = 0, y = 0;
      while (x < listA.size() && y < listB.size()) {
        double delta = expected[listA[x]] - listB[y];
        if (std::abs(delta) <= kWindow) {
          pair(listA[x], listB[y]);
          ++x;
          ++y;
        } else if (delta < 0) {
          ++x;
        } else {
          ++y;
        }
      }
    }
  }

  GraphIndex a_, b_;
  const Graph& graphA_;
  const Graph& graphB_;
  std::deque<std::pair<int, int>> queue_;
};

void matchGraphs(const Graph& a, const Graph& b, LabelTable& labels, NodeMatching& out) {
  GraphMatcher matcher(a, b, labels);
  matcher.run();
  const GraphIndex& ia = matcher.a();
  const GraphIndex& ib = matcher.b();
  for (size_t i = 0; i < ia.nodes.size(); ++i) {
    int j = ia.partner[i];
    if (j < 0) continue;
    const Node* na = ia.nodes[i];
    const Node* nb = ib.nodes[j];
    out.pairs.emplace_back(na, nb);
    out.aToB.emplace(na, nb);
    out.bToA.emplace(nb, na);
    if (na->hasBody() && nb->hasBody()) matchGraphs(*na->body(), *nb->body(), labels, out);
  }
}

// Nodes without a partner, in walk order; inside a fused group only when the group has one
// (the members of an unmatched group are implied by the group).
std::vector<const Node*> unmatched(const Graph& graph,
                                   const std::unordered_map<const Node*, const Node*>& partners) {
  std::vector<const Node*> out;
  for (const Node* node : graph.nodes()) {
    bool matched = partners.count(node) != 0;
    if (!matched) out.push_back(node);
    if (matched && node->hasBody()) {
      auto inner = unmatched(*node->body(), partners);
      out.insert(out.end(), inner.begin(), inner.end());
    }
  }
  return out;
}

} // namespace

NodeMatching matchNodes(const Graph& a, const Graph& b) {
  NodeMatching matching;
  LabelTable labels;
  matchGraphs(a, b, labels, matching);
  matching.onlyInA = unmatched(a, matching.aToB);
  matching.onlyInB = unmatched(b, matching.bToA);
  return matching;
}

} // namespace loupe::diff
