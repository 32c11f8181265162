// Scaling fits: a dim of three or more compiles as a polynomial of degree at most two in the
// input dims that change across them, with small integer coefficients, exact in every compile
// (x.0, 3*x.0, x.0 + 1, x.0*y.0, x.0**2). A dim that is not linear in an input dim grows
// faster than that input (a broadcast blow-up), which is what scaling analysis reports.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/sym_expr.h"
#include "inspector/diff/dim_abstraction.h"

namespace loupe::diff {

struct DimFit {
  SymExpr expr;                         // over the input-dim names of the abstraction
  std::vector<std::string> nonlinearIn; // input dims it is not linear in (x.0 for x.0**2)
  bool linear() const { return nonlinearIn.empty(); }
};

// The simplest fit of `dims` (one per compile of `abstraction`): DimAbstraction::explain's when
// it has one, else the polynomial with the fewest terms. nullopt when none is exact. With two
// compiles every fit is underdetermined beyond explain's forms, so only those are found.
std::optional<DimFit> fitDim(const DimAbstraction& abstraction, const std::vector<SymExpr>& dims);

// The input dims `expr` is not linear in (its second difference along the dim is not zero).
std::vector<std::string> nonlinearInputDims(const SymExpr& expr);

} // namespace loupe::diff
