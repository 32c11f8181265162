// How one elementwise op of a group computes: the precision it computes in (half types widen
// to float, an op takes the widest category of its operands and result) and its scalar C++
// expression from the registry's emitScalar, with symbolic attributes read from the run-time
// scalars `sym<k>` (docs/cpu-codegen.md, "Symbolic attributes" and "Precision").
#pragma once

#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ops/op_registry.h"

namespace loupe::codegen {

// The precision values of a dtype are computed in: half types widen to float.
DType computeDType(DType dtype);

// The widest category among an op's operands and result: bool < integer < float < double.
DType opComputeDType(const Node& node);

// The name of run-time scalar `index` in a kernel.
std::string scalarName(size_t index);

// The scalar expression of an Elementwise node over `args`, computed in opComputeDType(node), its
// symbolic attributes read from the run-time scalars (`scalars`: the group's, in order). An op
// that computes something from an attribute while generating (a literal other than the
// attribute itself) cannot take it at run time: Unsupported is thrown.
std::string scalarExpression(const Node& node, const std::vector<std::string>& args,
                             const std::vector<SymExpr>& scalars, const OpRegistry& registry);

} // namespace loupe::codegen
