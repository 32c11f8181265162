// What the front-half passes share: which nodes a pass may touch, how to read a literal
// constant, how a rewrite names a node in its decision, and how a node is replaced by values
// while keeping the printed names stable.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ops/op_registry.h"

namespace loupe {

// The registry entry of a node's op, or null for an opaque (unregistered) op.
const OpInfo* registeredOp(const Node& node);

// A registered, side-effect-free node without a body: what CSE, DCE, folding and
// simplification may merge, erase or evaluate. Opaque ops and fused groups never qualify.
bool isRewritable(const Node& node);

// Whether `node` may write to one of its operands: opaque and impure ops, and in-place aten
// overloads (a trailing '_' on the op name, e.g. aten.add_.Tensor, aten.copy_).
bool mayMutateOperands(const Node& node);

// Whether anything writes to `value` or to a view of it.
bool isMutated(const Value& value);

// The literal data of a value defined by loupe.constant (one value means a splat), else null.
const FloatList* constantData(const Value* value);

// Whether `value` is a loupe.constant whose every element equals `expected`.
bool isSplatConstant(const Value* value, double expected);

// "%7 = aten.mul.Tensor(%1, %2)": how decisions name a node.
std::string describeCall(const Node& node);
std::string valueRef(const Value* value);               // "%x", or "none" for an absent operand
std::vector<std::string> resultNames(const Node& node); // for Decision::nodes

// Replaces every result of `node` by the value at the same index, erases the node, and gives
// each replacement that has no name yet the name of the result it replaces, so the printed IR
// keeps the user's names across rewrites.
void replaceNode(Graph& graph, Node& node, const std::vector<Value*>& replacements);

// The names a graph's values have, for a rewrite that names new values after old ones
// (`%x_contiguous`, `%g_rows`): fresh(base) is `base`, or base with the smallest number after it
// that no value has, and is taken from then on.
class ValueNames {
public:
  explicit ValueNames(const Graph& graph);
  std::string fresh(const std::string& base);

private:
  std::set<std::string> names_;
};

// Names every unnamed node result with the smallest unused number, in graph order, so the
// plan, the trace and later decisions can refer to values a rewrite created.
void nameNewValues(Graph& graph);

} // namespace loupe
