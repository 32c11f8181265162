#include "inspector/diff/dim_abstraction.h"

#include <functional>

#include "compiler/ir/error.h"

namespace loupe::diff {
namespace {

std::vector<const Value*> tensorInputs(const Graph& graph) {
  std::vector<const Value*> out;
  for (const auto& input : graph.inputs())
    if (input->type().isTensor()) out.push_back(input.get());
  return out;
}

// The integer c with num[k] == c * den[k] in every compile, if there is one.
std::optional<int64_t> exactRatio(const std::vector<int64_t>& num,
                                  const std::vector<int64_t>& den) {
  std::optional<int64_t> ratio;
  for (size_t k = 0; k < num.size() && !ratio; ++k)
    if (den[k] != 0) {
      if (num[k] % den[k] != 0) return std::nullopt;
      ratio = num[k] / den[k];
    }
  if (!ratio) return std::nullopt;
  for (size_t k = 0; k < num.size(); ++k)
    if (num[k] != *ratio * den[k]) return std::nullopt;
  return ratio;
}

} // namespace

DimAbstraction::DimAbstraction(const std::vector<const Graph*>& graphs,
                               const std::vector<std::string>& inputNames) {
  if (graphs.empty()) throw Error("diff", "dim abstraction needs at least one compile");
  std::vector<const Value*> reference = tensorInputs(*graphs[0]);
  for (size_t k = 0; k < reference.size(); ++k) {
    std::string name = k < inputNames.size() ? inputNames[k] : "in" + std::to_string(k);
    for (size_t d = 0; d < reference[k]->tensorType().rank(); ++d)
      names_.push_back(name + "." + std::to_string(d));
  }
  for (size_t c = 0; c < graphs.size(); ++c) {
    std::vector<const Value*> inputs = tensorInputs(*graphs[c]);
    ErrorContext where{.graph = graphs[c]->name()};
    if (inputs.size() != reference.size())
      throw Error("diff",
                  "compile " + std::to_string(c) + " has " + std::to_string(inputs.size()) +
                      " tensor inputs where compile 0 has " + std::to_string(reference.size()) +
                      ": these are not compiles of one frame",
                  where);
    std::vector<SymExpr>& dims = dims_.emplace_back();
    for (size_t k = 0; k < inputs.size(); ++k) {
      const Shape& shape = inputs[k]->tensorType().shape;
      if (shape.size() != reference[k]->tensorType().rank())
        throw Error("diff",
                    "tensor input " + std::to_string(k) + " has rank " +
                        std::to_string(shape.size()) + " in compile " + std::to_string(c) +
                        " but rank " + std::to_string(reference[k]->tensorType().rank()) +
                        " in compile 0",
                    where);
      dims.insert(dims.end(), shape.begin(), shape.end());
    }
  }
  varies_.resize(names_.size());
  for (size_t p = 0; p < names_.size(); ++p)
    for (const auto& dims : dims_)
      varies_[p] = varies_[p] || !(dims[p] == dims_[0][p]);
  // A symbol shared by several input dims names the one that varies, then the first.
  symbolNames_.resize(dims_.size());
  for (size_t c = 0; c < dims_.size(); ++c)
    for (bool wantVarying : {true, false})
      for (size_t p = 0; p < names_.size(); ++p)
        if (varies_[p] == wantVarying && dims_[c][p].isSymbol())
          symbolNames_[c].emplace(dims_[c][p].str(), names_[p]);
}

size_t DimAbstraction::numCompiles() const {
  return dims_.size();
}

size_t DimAbstraction::positionOf(const std::string& inputDim) const {
  for (size_t p = 0; p < names_.size(); ++p)
    if (names_[p] == inputDim) return p;
  throw Error("diff", "no input dim named '" + inputDim + "'");
}

bool DimAbstraction::varies(const std::string& inputDim) const {
  return varies_[positionOf(inputDim)];
}

std::optional<int64_t> DimAbstraction::valueOf(const std::string& inputDim, size_t compile) const {
  return dims_.at(compile)[positionOf(inputDim)].constant();
}

const SymExpr& DimAbstraction::dimOf(const std::string& inputDim, size_t compile) const {
  return dims_.at(compile)[positionOf(inputDim)];
}

std::vector<std::string> DimAbstraction::inputDimsEqualTo(size_t compile, int64_t value) const {
  std::vector<std::string> out;
  for (size_t p = 0; p < names_.size(); ++p)
    if (dims_.at(compile)[p].constant() == value) out.push_back(names_[p]);
  return out;
}

std::optional<SymExpr> DimAbstraction::explain(const std::vector<SymExpr>& dims) const {
  if (dims.size() != dims_.size())
    throw Error("diff", "a dim given for " + std::to_string(dims.size()) +
                            " compiles, but the abstraction spans " + std::to_string(dims_.size()));
  std::vector<int64_t> values;
  for (const SymExpr& dim : dims) {
    if (!dim.isConstant()) return explainSymbolic(dims);
    values.push_back(*dim.constant());
  }
  return explainConcrete(values);
}

// A dynamic compile states the expression; every other compile must agree with it.
std::optional<SymExpr> DimAbstraction::explainSymbolic(const std::vector<SymExpr>& dims) const {
  std::optional<SymExpr> expr;
  for (size_t c = 0; c < dims.size() && !expr; ++c) {
    if (dims[c].isConstant()) continue;
    std::map<std::string, SymExpr, std::less<>> renames;
    for (const std::string& symbol : dims[c].symbols()) {
      auto it = symbolNames_[c].find(symbol);
      if (it == symbolNames_[c].end()) break;
      renames.emplace(symbol, SymExpr::symbol(it->second));
    }
    if (renames.size() != dims[c].symbols().size()) break;
    expr = dims[c].substitute(renames);
  }
  auto agrees = [&](size_t c) {
    if (!dims[c].isConstant()) {
      std::map<std::string, SymExpr, std::less<>> renames;
      for (const auto& [symbol, name] : symbolNames_[c])
        renames.emplace(symbol, SymExpr::symbol(name));
      return dims[c].substitute(renames) == *expr;
    }
    SymbolBindings bindings;
    for (const std::string& name : expr->symbols()) {
      std::optional<int64_t> value = dims_[c][positionOf(name)].constant();
      if (!value) return false;
      bindings.emplace(name, *value);
    }
    return expr->evaluate(bindings) == *dims[c].constant();
  };
  bool consistent = expr.has_value();
  for (size_t c = 0; c < dims.size() && consistent; ++c)
    consistent = agrees(c);
  if (consistent) return expr;
  // A symbol that no input dim names (an unbacked size) is kept when every compile has it.
  for (const SymExpr& dim : dims)
    if (!(dim == dims[0])) return std::nullopt;
  return dims[0];
}

// The forms are tried from the simplest; within a form, input dims in order (those that do not
// change across the compiles cannot explain a value that does, and are constants otherwise).
std::optional<SymExpr> DimAbstraction::explainConcrete(const std::vector<int64_t>& values) const {
  bool constant = true;
  for (int64_t v : values)
    constant = constant && v == values[0];
  if (constant) return SymExpr(values[0]);

  // The varying input dims known in every compile, one per distinct sequence of values.
  std::vector<std::pair<SymExpr, std::vector<int64_t>>> candidates;
  for (size_t p = 0; p < names_.size(); ++p) {
    if (!varies_[p]) continue;
    std::vector<int64_t> seen;
    for (const auto& dims : dims_)
      if (auto v = dims[p].constant()) seen.push_back(*v);
    if (seen.size() != dims_.size()) continue;
    bool duplicate = false;
    for (const auto& [expr, other] : candidates)
      duplicate = duplicate || other == seen;
    if (!duplicate) candidates.emplace_back(SymExpr::symbol(names_[p]), std::move(seen));
  }

  using Form = std::function<std::optional<SymExpr>(const SymExpr&, const std::vector<int64_t>&)>;
  const Form forms[] = {
      [&](const SymExpr& dim, const std::vector<int64_t>& of) -> std::optional<SymExpr> {
        if (of == values) return dim;
        return std::nullopt;
      },
      [&](const SymExpr& dim, const std::vector<int64_t>& of) -> std::optional<SymExpr> {
        if (auto c = exactRatio(values, of); c && *c > 1) return *c * dim;
        return std::nullopt;
      },
      [&](const SymExpr& dim, const std::vector<int64_t>& of) -> std::optional<SymExpr> {
        if (auto c = exactRatio(of, values); c && *c > 1) return SymExpr::floorDiv(dim, *c);
        return std::nullopt;
      },
      [&](const SymExpr& dim, const std::vector<int64_t>& of) -> std::optional<SymExpr> {
        int64_t offset = values[0] - of[0];
        for (size_t k = 0; k < values.size(); ++k)
          if (values[k] != of[k] + offset) return std::nullopt;
        return dim + offset;
      },
  };
  for (const Form& form : forms)
    for (const auto& [dim, of] : candidates)
      if (auto expr = form(dim, of)) return expr;

  for (size_t i = 0; i < candidates.size(); ++i)
    for (size_t j = i; j < candidates.size(); ++j) {
      std::vector<int64_t> product;
      for (size_t k = 0; k < values.size(); ++k)
        product.push_back(candidates[i].second[k] * candidates[j].second[k]);
      if (auto c = exactRatio(values, product); c && *c > 0)
        return *c * candidates[i].first * candidates[j].first;
    }
  return std::nullopt;
}

} // namespace loupe::diff
