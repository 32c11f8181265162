#include "compiler/pass/fusion_group.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "compiler/ir/error.h"
#include "compiler/ops/in_place_gather.h"
#include "compiler/ops/op_registry.h"

namespace loupe {

namespace {

std::unordered_map<const Node*, size_t> positions(const Graph& graph) {
  std::unordered_map<const Node*, size_t> pos;
  for (Node* node : graph.nodes())
    pos.emplace(node, pos.size());
  return pos;
}

std::vector<Node*> inGraphOrder(std::vector<Node*> members,
                                const std::unordered_map<const Node*, size_t>& pos) {
  for (Node* member : members)
    if (!pos.count(member))
      throw Error("fusion", "cannot group " + member->describe() + ": it is in another graph");
  std::sort(members.begin(), members.end(),
            [&](const Node* a, const Node* b) { return pos.at(a) < pos.at(b); });
  return members;
}

// Copies the members into `body`, reading outside values through new body inputs.
class BodyBuilder {
public:
  explicit BodyBuilder(Graph& body) : body_(body) {}

  void add(const Node& member) {
    if (member.op() == "loupe.fused") {
      const Graph& inner = *member.body();
      for (size_t i = 0; i < inner.numInputs(); ++i)
        mapped_[inner.input(i)] = lookup(member.operand(i));
      for (Node* node : inner.nodes())
        copy(*node);
      for (size_t i = 0; i < member.numResults(); ++i)
        mapped_[member.result(i)] = mapped_.at(inner.outputs()[i]);
    } else {
      copy(member);
    }
  }

  Value* inner(Value* outer) const { return mapped_.at(outer); }
  const std::vector<Value*>& externals() const { return externals_; }

private:
  void copy(const Node& node) {
    std::vector<Value*> operands;
    for (Value* v : node.operands())
      operands.push_back(lookup(v));
    std::vector<Type> types;
    for (Value* r : node.results())
      types.push_back(r->type());
    Node* c = body_.createNode(node.op(), operands, types, node.attrs(), node.loc());
    for (size_t i = 0; i < node.numResults(); ++i) {
      c->result(i)->setName(node.result(i)->name());
      mapped_[node.result(i)] = c->result(i);
    }
  }

  Value* lookup(Value* outer) {
    if (!outer) return nullptr;
    auto it = mapped_.find(outer);
    if (it != mapped_.end()) return it->second;
    externals_.push_back(outer);
    return mapped_[outer] = body_.addInput(outer->type(), outer->name());
  }

  Graph& body_;
  std::unordered_map<const Value*, Value*> mapped_;
  std::vector<Value*> externals_;
};

} // namespace

bool isFusablePointwise(const Node& node) {
  if (node.op() == "loupe.fused") {
    const Attribute* kind = node.attrs().find("kind");
    if (!kind || *kind != Attribute(std::string("pointwise"))) return false;
    // A group that gathers stays pointwise: generated reductions do not read gathers.
    const auto& inner = node.body()->nodes();
    return std::none_of(inner.begin(), inner.end(),
                        [](const Node* member) { return isInPlaceGather(*member); });
  }
  const OpInfo* info = OpRegistry::global().find(node.op());
  return info && info->kind == OpKind::Elementwise && info->emitScalar && node.numResults() == 1 &&
         node.result()->type().isTensor();
}

FusionPartition::FusionPartition(const Graph& graph) {
  for (Node* node : graph.nodes()) {
    position_.emplace(node, position_.size());
    groupOf_.emplace(node, static_cast<int>(members_.size()));
    members_.push_back({node});
  }
}

bool FusionPartition::readOnlyBy(const Node& node, int group) const {
  for (const Value* result : node.results()) {
    if (result->isGraphOutput()) return false;
    for (const Node* user : result->users())
      if (groupOf(user) != group) return false;
  }
  return true;
}

bool FusionPartition::canMerge(int a, int b) const {
  auto inMerged = [&](const Node* node) {
    int g = groupOf_.at(node);
    return g == a || g == b;
  };
  // Walk forward from the merged group through outside groups, each entered at any member and
  // left from any member, as it will be once collapsed.
  std::vector<int> frontier;
  std::vector<bool> seen(members_.size(), false);
  auto leaveFrom = [&](int group) { // false when an outside group feeds the merged one
    bool outside = group != a && group != b;
    for (const Node* member : members_[group])
      for (Value* r : member->results())
        for (Node* user : r->users()) {
          if (!groupOf_.count(user)) continue; // not a top-level node of this graph
          if (inMerged(user)) {
            if (outside) return false;
          } else if (int g = groupOf_.at(user); !seen[g]) {
            seen[g] = true;
            frontier.push_back(g);
          }
        }
    return true;
  };
  leaveFrom(a);
  leaveFrom(b);
  while (!frontier.empty()) {
    int group = frontier.back();
    frontier.pop_back();
    if (!leaveFrom(group)) return false;
  }
  return true;
}

void FusionPartition::merge(int into, int from) {
  if (into == from) return;
  auto& target = members_.at(into);
  for (Node* node : members_.at(from)) {
    groupOf_[node] = into;
    target.push_back(node);
  }
  members_[from].clear();
  std::sort(target.begin(), target.end(),
            [&](const Node* x, const Node* y) { return position_.at(x) < position_.at(y); });
}

int FusionPartition::materialize(const std::string& kind) {
  int created = 0;
  for (auto& group : members_)
    if (group.size() >= 2) {
      createFusedGroup(group, kind);
      ++created;
      group.clear();
    }
  return created;
}

Node* createFusedGroup(const std::vector<Node*>& unordered, const std::string& kind) {
  if (unordered.empty()) throw Error("fusion", "cannot create an empty fused group");
  Graph& graph = *unordered.front()->graph();
  auto pos = positions(graph);
  std::vector<Node*> members = inGraphOrder(unordered, pos);
  std::unordered_set<const Node*> inGroup(members.begin(), members.end());
  Node* lastMember = members.back();

  auto body = std::make_unique<Graph>(graph.name() + "." + kind);
  BodyBuilder builder(*body);
  for (Node* member : members)
    builder.add(*member);

  std::vector<Value*> escaping; // group values read after the group
  for (Node* member : members)
    for (Value* r : member->results()) {
      bool usedOutside =
          r->isGraphOutput() || std::any_of(r->users().begin(), r->users().end(),
                                            [&](Node* user) { return !inGroup.count(user); });
      if (usedOutside) escaping.push_back(r);
    }
  std::vector<Value*> bodyOutputs;
  std::vector<Type> resultTypes;
  for (Value* v : escaping) {
    bodyOutputs.push_back(builder.inner(v));
    resultTypes.push_back(v->type());
  }
  body->setOutputs(bodyOutputs);

  AttrMap attrs;
  attrs.set("kind", kind);
  Node* fused = graph.createNode("loupe.fused", builder.externals(), resultTypes, std::move(attrs),
                                 members.front()->loc(), lastMember);
  fused->setBody(std::move(body));

  // Outside nodes placed between the members that read the group must now follow it; convexity
  // guarantees none of them feeds a member, so moving them keeps the order topological.
  std::unordered_set<const Value*> dependsOnGroup;
  std::vector<Node*> toMove;
  for (Node* node : graph.nodes()) {
    size_t p = pos.count(node) ? pos.at(node) : 0;
    if (node == fused || p < pos.at(members.front()) || p > pos.at(lastMember)) continue;
    bool dependent =
        inGroup.count(node) || std::any_of(node->operands().begin(), node->operands().end(),
                                           [&](Value* v) { return v && dependsOnGroup.count(v); });
    if (!dependent) continue;
    for (Value* r : node->results())
      dependsOnGroup.insert(r);
    if (!inGroup.count(node)) toMove.push_back(node);
  }
  for (Node* node : toMove)
    graph.moveBefore(node, lastMember);

  for (size_t i = 0; i < escaping.size(); ++i) {
    fused->result(i)->setName(escaping[i]->name());
    graph.replaceAllUsesWith(escaping[i], fused->result(i));
  }
  for (auto it = members.rbegin(); it != members.rend(); ++it)
    graph.eraseNode(*it);
  return fused;
}

} // namespace loupe
