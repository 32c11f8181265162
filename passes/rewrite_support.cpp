#include "passes/rewrite_support.h"

#include <algorithm>
#include <set>

namespace loupe {

const OpInfo* registeredOp(const Node& node) {
  return OpRegistry::global().find(node.op());
}

bool isRewritable(const Node& node) {
  const OpInfo* info = registeredOp(node);
  return info && info->pure && !node.hasBody() && node.op() != "loupe.fused";
}

bool mayMutateOperands(const Node& node) {
  const OpInfo* info = registeredOp(node);
  if (!info || !info->pure) return true;
  // "aten.add_.Tensor" → overload packet "add_"; in-place aten ops end with '_'.
  std::string_view op = node.op();
  size_t start = op.find('.');
  std::string_view packet = start == std::string_view::npos ? op : op.substr(start + 1);
  packet = packet.substr(0, packet.find('.'));
  return !packet.empty() && packet.back() == '_';
}

bool isMutated(const Value& value) {
  return std::any_of(value.users().begin(), value.users().end(), [](const Node* user) {
    if (mayMutateOperands(*user)) return true;
    const OpInfo* info = registeredOp(*user);
    if (info->kind != OpKind::View) return false;
    auto results = user->results();
    return std::any_of(results.begin(), results.end(),
                       [](const Value* v) { return isMutated(*v); });
  });
}

const FloatList* constantData(const Value* value) {
  if (!value || !value->definingNode() || value->definingNode()->op() != "loupe.constant")
    return nullptr;
  const Attribute* data = value->definingNode()->attrs().find("data");
  return data ? std::get_if<FloatList>(data) : nullptr;
}

bool isSplatConstant(const Value* value, double expected) {
  const FloatList* data = constantData(value);
  return data && !data->empty() &&
         std::all_of(data->begin(), data->end(), [&](double v) { return v == expected; });
}

std::string valueRef(const Value* value) {
  if (!value) return "none";
  return "%" + (value->name().empty() ? std::string("?") : value->name());
}

std::vector<std::string> resultNames(const Node& node) {
  std::vector<std::string> names;
  for (const Value* result : node.results())
    names.push_back(result->name());
  return names;
}

std::string describeCall(const Node& node) {
  std::string text = node.describe() + "(";
  for (size_t i = 0; i < node.numOperands(); ++i)
    text += (i ? ", " : "") + valueRef(node.operand(i));
  return text + ")";
}

void replaceNode(Graph& graph, Node& node, const std::vector<Value*>& replacements) {
  for (size_t i = 0; i < replacements.size(); ++i) {
    Value* old = node.result(i);
    Value* replacement = replacements[i];
    graph.replaceAllUsesWith(old, replacement);
    if (replacement->name().empty()) replacement->setName(old->name());
  }
  graph.eraseNode(&node);
}

void nameNewValues(Graph& graph) {
  std::set<std::string, std::less<>> used;
  for (const auto& input : graph.inputs())
    used.insert(input->name());
  for (const Node* node : graph.nodes())
    for (const Value* result : node->results())
      used.insert(result->name());
  int next = 0;
  for (Node* node : graph.nodes())
    for (Value* result : node->results()) {
      if (!result->name().empty()) continue;
      while (used.count(std::to_string(next)))
        ++next;
      result->setName(std::to_string(next));
      used.insert(result->name());
    }
}

ValueNames::ValueNames(const Graph& graph) {
  for (const auto& input : graph.inputs())
    names_.insert(input->name());
  for (const Node* node : graph.nodes())
    for (const Value* result : node->results())
      names_.insert(result->name());
}

std::string ValueNames::fresh(const std::string& base) {
  std::string name = base;
  for (int k = 1; names_.count(name); ++k)
    name = base + std::to_string(k);
  names_.insert(name);
  return name;
}

} // namespace loupe
