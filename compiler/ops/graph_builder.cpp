#include "compiler/ops/graph_builder.h"

#include "compiler/ir/error.h"
#include "compiler/ops/op_registry.h"

namespace loupe {

GraphBuilder::GraphBuilder(Graph& graph, Node* insertBefore, SourceLoc loc)
    : graph_(graph), before_(insertBefore), loc_(std::move(loc)) {}

std::vector<Value*> GraphBuilder::opResults(std::string_view name, std::vector<Value*> operands,
                                            AttrMap attrs) {
  const OpInfo* info = OpRegistry::global().find(name);
  if (!info) throw Error("builder", "cannot build unregistered op " + std::string(name));
  std::vector<Type> types = inferTypes(*info, operands, attrs);
  last_ = graph_.createNode(std::string(name), std::move(operands), std::move(types),
                            std::move(attrs), loc_, before_);
  return last_->results();
}

Value* GraphBuilder::op(std::string_view name, std::vector<Value*> operands, AttrMap attrs) {
  auto results = opResults(name, std::move(operands), std::move(attrs));
  if (results.size() != 1)
    throw Error("builder", std::string(name) + " has " + std::to_string(results.size()) +
                               " results; use opResults");
  return results[0];
}

Value* GraphBuilder::scalar(double value, DType dtype, Device device) {
  AttrMap attrs;
  attrs.set("dtype", dtype);
  attrs.set("shape", IntList{});
  attrs.set("data", FloatList{value});
  if (!device.isCpu()) attrs.set("device", device.str());
  return op("loupe.constant", {}, std::move(attrs));
}

} // namespace loupe
