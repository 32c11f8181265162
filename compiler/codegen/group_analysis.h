// The analysis of a group (a loupe.fused node or a lone op) before its kernel is emitted: the
// values it reads and writes, its iteration space, its reduction and which values live before it
// (the full space) or after it (the kept dims), and its symbolic attribute values. Whatever the
// emitter cannot generate is refused here, with the reason canGenerateCpuKernel reports.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ops/op_registry.h"

namespace loupe::codegen {

// Why a group is not generated: becomes canGenerateCpuKernel's `whyNot`.
struct Unsupported {
  std::string why;
};

// Values before the reduction walk the whole space; values after it only the kept dims.
enum class Space { Full, Kept };

// What a group is, as the emitter sees it.
struct GroupAnalysis {
  // The kernel's operands are the inputs, then the outputs: a fused node's body inputs and
  // yielded values, a lone node's operands and results.
  std::vector<const Value*> inputs;
  std::vector<const Node*> nodes; // in order, loupe.constant nodes included
  std::vector<const Value*> outputs;
  const Node* reduction = nullptr; // the group's one Reduction node, if any
  std::vector<size_t> reducedDims; // sorted
  bool keepdim = false;
  Shape iterationShape;                // the outputs' shape, or the shape of the reduction's input
  std::map<const Value*, Space> space; // inputs and node results; constants have none
  // Symbolic attribute values, distinct, in order of first use: run-time scalar arguments.
  std::vector<SymExpr> scalars;
};

// A loupe.constant node (the analysis accepts one-value ones only): the emitter declares it as a
// literal, and it has no place in the space.
bool isConstantNode(const Node* node);

// Throws Unsupported when the node is not generated (see canGenerateCpuKernel).
GroupAnalysis analyzeGroup(const Node& node, const OpRegistry& registry);

// For each dim of `value`, the iteration dim it is indexed by (right-aligned broadcasting), or
// kNoIterationDim (compiler/codegen/kernel_signature.h). Throws Unsupported when the value has a
// higher rank than its space.
std::vector<size_t> operandDims(const GroupAnalysis& group, const Value* value);

} // namespace loupe::codegen
