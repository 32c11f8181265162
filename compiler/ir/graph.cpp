#include "compiler/ir/graph.h"

#include <algorithm>
#include <unordered_map>

#include "compiler/ir/error.h"

namespace loupe {

// ---- Value ----------------------------------------------------------------------------------

bool Value::isGraphOutput() const {
  const auto& outs = graph_->outputs();
  return std::find(outs.begin(), outs.end(), this) != outs.end();
}

void Value::removeUser(Node* user) {
  auto it = std::find(users_.begin(), users_.end(), user);
  if (it != users_.end()) users_.erase(it);
}

// ---- Node -----------------------------------------------------------------------------------

void Node::setOperand(size_t i, Value* value) {
  if (operands_.at(i)) operands_[i]->removeUser(this);
  operands_[i] = value;
  if (value) value->users_.push_back(this);
}

void Node::setOperands(std::vector<Value*> values) {
  for (Value* v : operands_)
    if (v) v->removeUser(this);
  operands_ = std::move(values);
  for (Value* v : operands_)
    if (v) v->users_.push_back(this);
}

std::vector<Value*> Node::results() const {
  std::vector<Value*> out;
  for (const auto& r : results_)
    out.push_back(r.get());
  return out;
}

void Node::setBody(std::unique_ptr<Graph> body) {
  body_ = std::move(body);
  if (body_) body_->parentNode_ = this;
}

std::string Node::describe() const {
  std::string s;
  for (size_t i = 0; i < results_.size(); ++i) {
    s += (i ? ", %" : "%") + (results_[i]->name().empty() ? "?" : results_[i]->name());
  }
  return (s.empty() ? "" : s + " = ") + op_;
}

// ---- Graph ----------------------------------------------------------------------------------

Graph::Graph(std::string name) : name_(std::move(name)) {}

Graph::~Graph() {
  // Drop use lists first so destroying nodes in any order never touches freed values.
  for (auto& n : nodes_)
    n->operands_.clear();
}

Value* Graph::addInput(Type type, std::string name) {
  inputs_.push_back(
      std::unique_ptr<Value>(new Value(std::move(type), this, nullptr, inputs_.size())));
  inputs_.back()->setName(std::move(name));
  return inputs_.back().get();
}

void Graph::eraseInput(size_t i) {
  Value* v = inputs_.at(i).get();
  if (v->hasUses())
    throw Error("graph", "cannot erase input %" + v->name() + ": it still has uses");
  inputs_.erase(inputs_.begin() + static_cast<std::ptrdiff_t>(i));
  for (size_t k = 0; k < inputs_.size(); ++k)
    inputs_[k]->index_ = k;
}

Node* Graph::createNode(std::string op, std::vector<Value*> operands, std::vector<Type> resultTypes,
                        AttrMap attrs, SourceLoc loc, Node* before) {
  auto node = std::unique_ptr<Node>(new Node());
  Node* n = node.get();
  n->op_ = std::move(op);
  n->attrs_ = std::move(attrs);
  n->loc_ = std::move(loc);
  n->graph_ = this;
  for (size_t i = 0; i < resultTypes.size(); ++i)
    n->results_.push_back(std::unique_ptr<Value>(new Value(std::move(resultTypes[i]), this, n, i)));
  n->setOperands(std::move(operands));
  auto where = before ? before->position_ : nodes_.end();
  n->position_ = nodes_.insert(where, std::move(node));
  return n;
}

void Graph::eraseNode(Node* node) {
  for (const auto& r : node->results_)
    if (r->hasUses())
      throw Error("graph", "cannot erase " + node->describe() + ": its results still have uses");
  node->setOperands({});
  nodes_.erase(node->position_);
}

void Graph::moveBefore(Node* node, Node* before) {
  auto where = before ? before->position_ : nodes_.end();
  nodes_.splice(where, nodes_, node->position_);
}

std::vector<Node*> Graph::nodes() const {
  std::vector<Node*> out;
  out.reserve(nodes_.size());
  for (const auto& n : nodes_)
    out.push_back(n.get());
  return out;
}

size_t Graph::numNodesRecursive() const {
  size_t count = 0;
  walk(*this, [&](Node&) { ++count; });
  return count;
}

void Graph::replaceAllUsesWith(Value* from, Value* to) {
  if (from == to) return;
  std::vector<Node*> users = from->users_;
  for (Node* user : users)
    for (size_t i = 0; i < user->operands_.size(); ++i)
      if (user->operands_[i] == from) user->setOperand(i, to);
  for (auto& out : outputs_)
    if (out == from) out = to;
}

std::unique_ptr<Graph> Graph::clone() const {
  auto copy = std::make_unique<Graph>(name_);
  std::unordered_map<const Value*, Value*> mapped;
  for (const auto& in : inputs_)
    mapped[in.get()] = copy->addInput(in->type(), in->name());
  for (const auto& n : nodes_) {
    std::vector<Value*> operands;
    for (Value* v : n->operands_)
      operands.push_back(v ? mapped.at(v) : nullptr);
    std::vector<Type> types;
    for (const auto& r : n->results_)
      types.push_back(r->type());
    Node* c = copy->createNode(n->op_, operands, types, n->attrs_, n->loc_);
    for (size_t i = 0; i < n->results_.size(); ++i) {
      c->result(i)->setName(n->results_[i]->name());
      mapped[n->results_[i].get()] = c->result(i);
    }
    if (n->body_) c->setBody(n->body_->clone());
  }
  for (Value* out : outputs_)
    copy->outputs_.push_back(mapped.at(out));
  return copy;
}

void walk(const Graph& graph, const std::function<void(Node&)>& visit) {
  for (Node* n : graph.nodes()) {
    visit(*n);
    if (n->hasBody()) walk(*n->body(), visit);
  }
}

} // namespace loupe
