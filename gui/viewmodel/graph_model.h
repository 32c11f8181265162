// What the canvas draws for one snapshot: the snapshot parsed from its .lir text and
// flattened into boxes and edges. Every op node is a box, fused groups included as
// clusters of their body's boxes (the fused node itself is the cluster, not a box); graph
// inputs are boxes too, and the graph's outputs meet in one "return" box. An edge joins the
// box that computes a value to each box that uses it, looking through fused-group
// boundaries, so a fused body's boxes connect to their real producers and consumers.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "compiler/ir/graph.h"

namespace loupe::view {

enum class BoxKind { Op, Input, Return };

struct Box {
  BoxKind kind = BoxKind::Op;
  std::string name;        // SSA name without '%'; "return" for the return box
  std::string op;          // empty for inputs and the return box
  std::string resultTypes; // as printed, comma separated: "f32[s0,64], f32[s0,1]"
  SourceLoc loc;
  std::string kernel; // the kernel that runs it (its own or its group's), when chosen
  std::vector<std::pair<std::string, std::string>> attributes; // name, printed value
  std::vector<std::string> operands; // "%name: type" per slot, "none" for an absent one
  int group = -1;                    // index into GraphModel::groups() when fused
  const Node* node = nullptr;        // null for inputs and the return box

  std::string title() const; // first line of the box: "%h = aten.addmm", "%x", "return"
};

struct Edge {
  int from = 0, to = 0; // box indices
  friend bool operator==(const Edge&, const Edge&) = default;
};

struct FusedGroup {
  std::string name; // the fused node's first result name
  std::string kernel, kind;
  std::vector<int> members; // box indices, in body order
  const Node* node = nullptr;
};

class GraphModel {
public:
  // Parses one graph of .lir text; an Error("parse") names fileName and the position.
  static std::shared_ptr<const GraphModel> fromText(std::string_view lir,
                                                    const std::string& fileName);
  explicit GraphModel(std::unique_ptr<Graph> graph);

  const Graph& graph() const { return *graph_; }
  const std::vector<Box>& boxes() const { return boxes_; }
  const std::vector<Edge>& edges() const { return edges_; }
  const std::vector<FusedGroup>& groups() const { return groups_; }

  int boxOf(const Node* node) const;           // -1 when the node is not a box (a fused node)
  int groupOf(const Node* node) const;         // -1 when the node is not a fused node
  int findByName(std::string_view name) const; // -1 when absent; op boxes win over inputs

private:
  void addNodes(const Graph& graph, int group);
  int producerBox(const Value* value) const;

  std::unique_ptr<Graph> graph_;
  std::vector<Box> boxes_;
  std::vector<Edge> edges_;
  std::vector<FusedGroup> groups_;
  std::unordered_map<const Node*, int> boxOfNode_, groupOfNode_;
  std::unordered_map<const Value*, int> boxOfInput_;
};

} // namespace loupe::view
