// How one elementwise op of a group computes: the precision it computes in (half types widen
// to float, an op takes the widest category of its operands and result) and its scalar C++
// expression from the registry's emitScalar, with symbolic attributes read from the run-time
// scalars `sym<k>` (docs/cpu-codegen.md, "Symbolic attributes" and "Precision"); and how values
// are stored, loaded and written, which every device's generator spells the same way.
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

// How a value of `dtype` is stored in memory (half types as their bits, bool as a byte) and
// computed in, as C++ type names; the kernel preludes define the fixed-width integer types and
// the half conversions loadExpr and storeExpr call (loupe_h2f, loupe_f2bf, ...).
std::string storageType(DType dtype);
std::string computeType(DType dtype);
// The computed value of an element `element` of storageType(dtype), and the stored form of a
// computed `value`.
std::string loadExpr(DType dtype, const std::string& element);
std::string storeExpr(DType dtype, const std::string& value);
// A loupe.constant's value in computeType(dtype): integers exactly, everything else as op
// patterns write literals.
std::string constantLiteral(double value, DType dtype);

// The name of run-time scalar `index` in a kernel.
std::string scalarName(size_t index);

// The scalar expression of an Elementwise node over `args`, computed in opComputeDType(node), its
// symbolic attributes read from the run-time scalars (`scalars`: the group's, in order). An op
// that computes something from an attribute while generating (a literal other than the
// attribute itself) cannot take it at run time: Unsupported is thrown.
std::string scalarExpression(const Node& node, const std::vector<std::string>& args,
                             const std::vector<SymExpr>& scalars, const OpRegistry& registry);

} // namespace loupe::codegen
