#include "gui/viewmodel/graph_model.h"

#include <algorithm>
#include <set>

#include "compiler/ir/parser.h"

namespace loupe::view {
namespace {

std::string joinedTypes(const std::vector<Value*>& values) {
  std::string out;
  for (const Value* value : values) {
    if (!out.empty()) out += ", ";
    out += value->type().str();
  }
  return out;
}

std::string stringAttr(const Node& node, std::string_view name) {
  const Attribute* attr = node.attrs().find(name);
  if (attr == nullptr) return {};
  if (const auto* text = std::get_if<std::string>(attr)) return *text;
  return attributeStr(*attr);
}

} // namespace

std::string Box::title() const {
  switch (kind) {
  case BoxKind::Input:
    return "%" + name;
  case BoxKind::Return:
    return "return";
  case BoxKind::Op:
    break;
  }
  return "%" + name + " = " + op;
}

std::shared_ptr<const GraphModel> GraphModel::fromText(std::string_view lir,
                                                       const std::string& fileName) {
  return std::make_shared<const GraphModel>(parseGraph(lir, fileName));
}

GraphModel::GraphModel(std::unique_ptr<Graph> graph) : graph_(std::move(graph)) {
  for (const auto& input : graph_->inputs()) {
    boxOfInput_[input.get()] = static_cast<int>(boxes_.size());
    boxes_.push_back(
        Box{.kind = BoxKind::Input, .name = input->name(), .resultTypes = input->type().str()});
  }
  addNodes(*graph_, -1);

  Box ret{.kind = BoxKind::Return, .name = "return", .resultTypes = joinedTypes(graph_->outputs())};
  const int retBox = static_cast<int>(boxes_.size());
  boxes_.push_back(std::move(ret));

  // Edges follow each box's operands (and the graph outputs) back to the box computing them.
  std::set<std::pair<int, int>> seen;
  auto connect = [&](const Value* value, int to) {
    if (value == nullptr) return;
    const int from = producerBox(value);
    if (from >= 0 && seen.emplace(from, to).second) edges_.push_back({from, to});
  };
  for (size_t i = 0; i < boxes_.size(); ++i)
    if (boxes_[i].node != nullptr)
      for (const Value* operand : boxes_[i].node->operands())
        connect(operand, static_cast<int>(i));
  for (const Value* output : graph_->outputs())
    connect(output, retBox);
}

void GraphModel::addNodes(const Graph& graph, int group) {
  for (Node* node : graph.nodes()) {
    if (node->hasBody()) {
      const int index = static_cast<int>(groups_.size());
      groupOfNode_[node] = index;
      groups_.push_back(
          FusedGroup{.name = node->numResults() > 0 ? node->result(0)->name() : std::string(),
                     .kernel = stringAttr(*node, "kernel"),
                     .kind = stringAttr(*node, "kind"),
                     .node = node});
      addNodes(*node->body(), index);
      continue;
    }
    Box box{.kind = BoxKind::Op,
            .name = node->numResults() > 0 ? node->result(0)->name() : std::string(),
            .op = node->op(),
            .resultTypes = joinedTypes(node->results()),
            .loc = node->loc(),
            .kernel = stringAttr(*node, "kernel"),
            .group = group,
            .node = node};
    if (box.kernel.empty() && group >= 0) box.kernel = groups_[group].kernel;
    for (const auto& [name, value] : node->attrs().values())
      box.attributes.emplace_back(name, attributeStr(value));
    for (const Value* operand : node->operands())
      box.operands.push_back(
          operand == nullptr ? "none" : "%" + operand->name() + ": " + operand->type().str());
    const int index = static_cast<int>(boxes_.size());
    boxOfNode_[node] = index;
    if (group >= 0) groups_[group].members.push_back(index);
    boxes_.push_back(std::move(box));
  }
}

// A fused body's input stands for the group's operand of the same index, and a fused
// node's result for the body output of the same index.
int GraphModel::producerBox(const Value* value) const {
  const Node* definer = value->definingNode();
  if (definer == nullptr) {
    const Node* parent = value->owningGraph()->parentNode();
    if (parent != nullptr) {
      const Value* outer = parent->operand(value->index());
      return outer == nullptr ? -1 : producerBox(outer);
    }
    auto it = boxOfInput_.find(value);
    return it == boxOfInput_.end() ? -1 : it->second;
  }
  if (definer->hasBody()) return producerBox(definer->body()->outputs().at(value->index()));
  return boxOf(definer);
}

int GraphModel::boxOf(const Node* node) const {
  auto it = boxOfNode_.find(node);
  return it == boxOfNode_.end() ? -1 : it->second;
}

int GraphModel::groupOf(const Node* node) const {
  auto it = groupOfNode_.find(node);
  return it == groupOfNode_.end() ? -1 : it->second;
}

int GraphModel::findByName(std::string_view name) const {
  if (!name.empty() && name.front() == '%') name.remove_prefix(1);
  int input = -1;
  for (size_t i = 0; i < boxes_.size(); ++i) {
    if (boxes_[i].name != name) continue;
    if (boxes_[i].kind == BoxKind::Op) return static_cast<int>(i);
    if (input < 0) input = static_cast<int>(i);
  }
  return input;
}

} // namespace loupe::view
