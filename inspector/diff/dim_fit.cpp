// Fitting searches monomial sets from the smallest: for each, the least-squares coefficients
// (normal equations, at most three unknowns) are rounded to integers and then checked exactly
// against every compile, so a fit is never approximate. A set needs fewer coefficients than
// there are compiles, so that at least one compile confirms the fit rather than defines it.
#include "inspector/diff/dim_fit.h"

#include <cmath>

namespace loupe::diff {
namespace {

constexpr size_t kMaxTerms = 3;
constexpr int64_t kMaxCoefficient = 1024;

struct Monomial {
  SymExpr expr;
  int degree;
  std::vector<int64_t> values; // per compile
};

// 1, each varying input dim, and each product of two of them; input dims with the same values
// in every compile are one (the first).
std::vector<Monomial> monomials(const DimAbstraction& abstraction) {
  size_t compiles = abstraction.numCompiles();
  std::vector<Monomial> linear;
  for (const std::string& name : abstraction.inputDims()) {
    if (!abstraction.varies(name)) continue;
    Monomial m{SymExpr::symbol(name), 1, {}};
    for (size_t c = 0; c < compiles; ++c)
      if (auto v = abstraction.valueOf(name, c)) m.values.push_back(*v);
    bool duplicate = false;
    for (const Monomial& other : linear)
      duplicate = duplicate || other.values == m.values;
    if (m.values.size() == compiles && !duplicate) linear.push_back(std::move(m));
  }
  std::vector<Monomial> out{{SymExpr(1), 0, std::vector<int64_t>(compiles, 1)}};
  out.insert(out.end(), linear.begin(), linear.end());
  for (size_t i = 0; i < linear.size(); ++i)
    for (size_t j = i; j < linear.size(); ++j) {
      Monomial m{linear[i].expr * linear[j].expr, 2, {}};
      for (size_t c = 0; c < compiles; ++c)
        m.values.push_back(linear[i].values[c] * linear[j].values[c]);
      out.push_back(std::move(m));
    }
  return out;
}

// Integer coefficients for `terms` that give `values` exactly, if the least-squares solution
// rounds to one.
std::optional<std::vector<int64_t>> solve(const std::vector<const Monomial*>& terms,
                                          const std::vector<int64_t>& values) {
  size_t n = terms.size();
  std::vector<std::vector<long double>> system(n, std::vector<long double>(n + 1, 0));
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j)
      for (size_t c = 0; c < values.size(); ++c)
        system[i][j] += static_cast<long double>(terms[i]->values[c]) * terms[j]->values[c];
    for (size_t c = 0; c < values.size(); ++c)
      system[i][n] += static_cast<long double>(terms[i]->values[c]) * values[c];
  }
  for (size_t col = 0; col < n; ++col) {
    size_t pivot = col;
    for (size_t r = col + 1; r < n; ++r)
      if (std::fabs(system[r][col]) > std::fabs(system[pivot][col])) pivot = r;
    if (std::fabs(system[pivot][col]) < 1e-9L) return std::nullopt; // the terms are dependent
    std::swap(system[col], system[pivot]);
    for (size_t r = 0; r < n; ++r) {
      if (r == col) continue;
      long double f = system[r][col] / system[col][col];
      for (size_t k = col; k <= n; ++k)
        system[r][k] -= f * system[col][k];
    }
  }
  std::vector<int64_t> coefficients;
  for (size_t i = 0; i < n; ++i) {
    long double x = std::round(system[i][n] / system[i][i]);
    if (x == 0 || std::fabs(x) > kMaxCoefficient) return std::nullopt;
    coefficients.push_back(static_cast<int64_t>(x));
  }
  for (size_t c = 0; c < values.size(); ++c) {
    __int128 sum = 0;
    for (size_t i = 0; i < n; ++i)
      sum += static_cast<__int128>(coefficients[i]) * terms[i]->values[c];
    if (sum != values[c]) return std::nullopt;
  }
  return coefficients;
}

// Sets of `size` monomials, fewest squares first, each handed to `visit` until it returns true.
template <typename Visit>
bool forEachSet(const std::vector<Monomial>& all, size_t size, Visit visit) {
  std::vector<std::vector<size_t>> sets;
  std::vector<size_t> current;
  auto build = [&](auto& self, size_t from) -> void {
    if (current.size() == size) {
      sets.push_back(current);
      return;
    }
    for (size_t i = from; i < all.size(); ++i) {
      current.push_back(i);
      self(self, i + 1);
      current.pop_back();
    }
  };
  build(build, 0);
  auto degree = [&](const std::vector<size_t>& set) {
    int sum = 0;
    for (size_t i : set)
      sum += all[i].degree;
    return sum;
  };
  std::stable_sort(sets.begin(), sets.end(),
                   [&](const auto& x, const auto& y) { return degree(x) < degree(y); });
  for (const auto& set : sets) {
    std::vector<const Monomial*> terms;
    for (size_t i : set)
      terms.push_back(&all[i]);
    if (visit(terms)) return true;
  }
  return false;
}

} // namespace

std::vector<std::string> nonlinearInputDims(const SymExpr& expr) {
  // Probing at multiples of 64 keeps exact divisions by small constants (x.0//2) linear.
  constexpr int64_t kProbe = 64;
  std::vector<std::string> names = expr.symbols();
  std::vector<std::string> out;
  for (const std::string& name : names) {
    SymbolBindings bindings;
    for (const std::string& other : names)
      bindings.emplace(other, kProbe);
    int64_t at[3];
    for (int64_t step = 1; step <= 3; ++step) {
      bindings[name] = step * kProbe;
      at[step - 1] = expr.evaluate(bindings);
    }
    if (at[0] - 2 * at[1] + at[2] != 0) out.push_back(name);
  }
  return out;
}

std::optional<DimFit> fitDim(const DimAbstraction& abstraction, const std::vector<SymExpr>& dims) {
  if (auto expr = abstraction.explain(dims)) return DimFit{*expr, nonlinearInputDims(*expr)};
  std::vector<int64_t> values;
  for (const SymExpr& dim : dims) {
    if (!dim.isConstant()) return std::nullopt; // explain has the only reading of a symbol
    values.push_back(*dim.constant());
  }
  std::vector<Monomial> all = monomials(abstraction);
  std::optional<SymExpr> fit;
  for (size_t size = 1; size <= kMaxTerms && size < values.size() && !fit; ++size)
    forEachSet(all, size, [&](const std::vector<const Monomial*>& terms) {
      auto coefficients = solve(terms, values);
      if (!coefficients) return false;
      SymExpr sum;
      for (size_t i = 0; i < terms.size(); ++i)
        sum += (*coefficients)[i] * terms[i]->expr;
      fit = sum;
      return true;
    });
  if (!fit) return std::nullopt;
  return DimFit{*fit, nonlinearInputDims(*fit)};
}

} // namespace loupe::diff
