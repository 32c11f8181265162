// Dims abstracted to the input dims they equal, so that graphs compiled at different input
// shapes can be compared "up to shapes". The tensor inputs of each compile are lined up by
// their ordinal among tensor inputs (index inputs, the symbolic sizes Dynamo passes once a
// frame turns dynamic, are skipped, so a static and a dynamic compile of one frame line up);
// input k's dim d is named `<name>.<d>`, where <name> is the caller's name for input k (the
// Dynamo source name, e.g. `x`) or `in<k>`. A dim of any node is explained by the simplest
// expression over those names (a constant, one input dim, a constant multiple or exact
// fraction of one, one plus a constant, a constant times a product of two) that gives its
// value in every compile at once (docs/differ.md, "Dim abstraction"). Symbolic dims (s0) are
// rewritten over the input-dim names through the input dims that are exactly that symbol.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/sym_expr.h"

namespace loupe::diff {

class DimAbstraction {
public:
  // `graphs[k]` is a graph of compile k (all compiles of one frame and graph kind). Throws
  // loupe::Error("diff", ...) when the tensor input counts or ranks disagree.
  explicit DimAbstraction(const std::vector<const Graph*>& graphs,
                          const std::vector<std::string>& inputNames = {});

  // The expression over input-dim names that gives `dims[k]` in compile k for every k, or
  // nullopt when none does (a dim that does not follow the inputs).
  std::optional<SymExpr> explain(const std::vector<SymExpr>& dims) const;

  // Whether an input dim position changes across the compiles (for the hard-coded-dim check).
  bool varies(const std::string& inputDim) const;
  // The input-dim names whose value in compile k equals `value` (empty when none).
  std::vector<std::string> inputDimsEqualTo(size_t compile, int64_t value) const;
  // The value of an input dim in compile k (nullopt when symbolic there).
  std::optional<int64_t> valueOf(const std::string& inputDim, size_t compile) const;
  // The input dim in compile k as that compile has it: a constant or a symbol such as s77.
  const SymExpr& dimOf(const std::string& inputDim, size_t compile) const;
  size_t numCompiles() const;
  // Every input-dim name, in input and dim order.
  const std::vector<std::string>& inputDims() const { return names_; }

private:
  size_t positionOf(const std::string& inputDim) const; // throws Error("diff") when unknown
  std::optional<SymExpr> explainSymbolic(const std::vector<SymExpr>& dims) const;
  std::optional<SymExpr> explainConcrete(const std::vector<int64_t>& values) const;

  std::vector<std::string> names_;         // input-dim names, in input and dim order
  std::vector<std::vector<SymExpr>> dims_; // [compile][position of the name]
  std::vector<bool> varies_;               // [position]
  std::vector<std::map<std::string, std::string, std::less<>>>
      symbolNames_; // [compile]: symbol -> the input-dim name that is exactly that symbol
};

} // namespace loupe::diff
