// The SSA dataflow graph: Graph owns Nodes, Nodes own their result Values, a Graph owns its
// input Values (block arguments). A fused group is a Node (op "loupe.fused") whose body is a
// nested Graph; the body is isolated: it sees only its own inputs, which correspond one to
// one to the fused node's operands, and its outputs correspond to the node's results.
//
// Node order in a graph is a topological order (the verifier checks it). Use lists are kept
// up to date by every mutation, so rewrites are O(uses).
#pragma once

#include <functional>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/attribute.h"
#include "compiler/ir/location.h"
#include "compiler/ir/type.h"

namespace loupe {

class Graph;
class Node;

class Value {
public:
  const Type& type() const { return type_; }
  const TensorType& tensorType() const { return type_.tensor(); }
  void setType(Type type) { type_ = std::move(type); }

  // The name printed after '%' (FX node names are kept; empty means "number me when printing").
  const std::string& name() const { return name_; }
  void setName(std::string name) { name_ = std::move(name); }

  Node* definingNode() const { return definingNode_; } // null for graph inputs
  Graph* owningGraph() const { return graph_; }        // the graph this value is visible in
  size_t index() const { return index_; }              // result index, or input index

  // Each use is one operand slot of one node; a node using a value twice appears twice.
  const std::vector<Node*>& users() const { return users_; }
  bool isGraphOutput() const;
  bool hasUses() const { return !users_.empty() || isGraphOutput(); }

private:
  friend class Graph;
  friend class Node;
  Value(Type type, Graph* graph, Node* definingNode, size_t index)
      : type_(std::move(type)), definingNode_(definingNode), graph_(graph), index_(index) {}
  void removeUser(Node* user);

  Type type_;
  std::string name_;
  Node* definingNode_;
  Graph* graph_;
  size_t index_;
  std::vector<Node*> users_;
};

class Node {
public:
  const std::string& op() const { return op_; }
  void setOp(std::string op) { op_ = std::move(op); }

  // An absent optional tensor operand (torch's None, e.g. a convolution without bias) is a
  // nullptr slot, printed as `none`; every other operand is a value visible in this graph.
  const std::vector<Value*>& operands() const { return operands_; }
  Value* operand(size_t i) const { return operands_.at(i); }
  size_t numOperands() const { return operands_.size(); }
  void setOperand(size_t i, Value* value);
  void setOperands(std::vector<Value*> values);

  size_t numResults() const { return results_.size(); }
  Value* result(size_t i = 0) const { return results_.at(i).get(); }
  std::vector<Value*> results() const;

  AttrMap& attrs() { return attrs_; }
  const AttrMap& attrs() const { return attrs_; }
  const SourceLoc& loc() const { return loc_; }
  void setLoc(SourceLoc loc) { loc_ = std::move(loc); }

  bool hasBody() const { return body_ != nullptr; }
  Graph* body() const { return body_.get(); }
  void setBody(std::unique_ptr<Graph> body);

  Graph* graph() const { return graph_; }

  // "%3 = aten.mm" — how errors and reports name this node.
  std::string describe() const;

private:
  friend class Graph;
  Node() = default;

  std::string op_;
  std::vector<Value*> operands_;
  std::vector<std::unique_ptr<Value>> results_;
  AttrMap attrs_;
  SourceLoc loc_;
  std::unique_ptr<Graph> body_;
  Graph* graph_ = nullptr;
  std::list<std::unique_ptr<Node>>::iterator position_;
};

class Graph {
public:
  explicit Graph(std::string name = "graph");
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  const std::string& name() const { return name_; }
  void setName(std::string name) { name_ = std::move(name); }

  // ---- inputs and outputs
  Value* addInput(Type type, std::string name = {});
  const std::vector<std::unique_ptr<Value>>& inputs() const { return inputs_; }
  Value* input(size_t i) const { return inputs_.at(i).get(); }
  size_t numInputs() const { return inputs_.size(); }
  void eraseInput(size_t i); // the input must have no uses
  const std::vector<Value*>& outputs() const { return outputs_; }
  void setOutputs(std::vector<Value*> outputs) { outputs_ = std::move(outputs); }
  void setOutput(size_t i, Value* value) { outputs_.at(i) = value; }

  // ---- nodes, in topological order
  // Creates a node before `before` (nullptr: at the end). Operands must be visible here.
  Node* createNode(std::string op, std::vector<Value*> operands, std::vector<Type> resultTypes,
                   AttrMap attrs = {}, SourceLoc loc = {}, Node* before = nullptr);
  void eraseNode(Node* node);                // its results must have no uses
  void moveBefore(Node* node, Node* before); // nullptr: to the end

  std::vector<Node*> nodes() const; // a snapshot: safe to mutate the graph while iterating
  size_t numNodes() const { return nodes_.size(); }
  size_t numNodesRecursive() const;                // nodes of fused bodies counted too
  Node* parentNode() const { return parentNode_; } // the fused node owning this body, or null

  // Replaces every use of `from` (operands and graph outputs) by `to`.
  void replaceAllUsesWith(Value* from, Value* to);

  // A deep copy: values and nodes map one to one, names, attributes and locations kept.
  std::unique_ptr<Graph> clone() const;

private:
  friend class Node;
  std::string name_;
  std::vector<std::unique_ptr<Value>> inputs_;
  std::vector<Value*> outputs_;
  std::list<std::unique_ptr<Node>> nodes_;
  Node* parentNode_ = nullptr;
};

// Visits every node in order, fused bodies included: a fused node first, then its body's nodes.
void walk(const Graph& graph, const std::function<void(Node&)>& visit);

} // namespace loupe
