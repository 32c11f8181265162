// Builds nodes with inferred result types, inserted before a fixed point in a graph and
// carrying one source location: what decompositions and rewrites use to emit replacement IR.
#pragma once

#include <string_view>
#include <vector>

#include "compiler/ir/graph.h"

namespace loupe {

class GraphBuilder {
public:
  // New nodes go before `insertBefore` (nullptr: at the end) and get `loc`.
  GraphBuilder(Graph& graph, Node* insertBefore, SourceLoc loc = {});

  // Creates a registered op; result types come from its shape inference. Throws Error for an
  // unknown op or a shape error.
  Value* op(std::string_view name, std::vector<Value*> operands, AttrMap attrs = {});
  std::vector<Value*> opResults(std::string_view name, std::vector<Value*> operands,
                                AttrMap attrs = {});

  // A 0-d constant tensor (loupe.constant) of `dtype` on `device`.
  Value* scalar(double value, DType dtype, Device device = {});

  Graph& graph() { return graph_; }
  Node* lastCreated() const { return last_; }

private:
  Graph& graph_;
  Node* before_;
  SourceLoc loc_;
  Node* last_ = nullptr;
};

} // namespace loupe
