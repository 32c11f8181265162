// Symbolic integer expressions for tensor dimensions: 128, s0, 2*s0, s0*s1, (s0 + 1)//2.
//
// A SymExpr is an immutable value in a canonical form: a sum of terms, each an integer
// coefficient times a product of atoms raised to powers. An atom is a symbol (s0, as Dynamo
// names them) or an integer division / modulo that could not be simplified away. Because the
// form is canonical, two expressions that simplify to the same polynomial compare equal and
// print identically, which is what the verifier, CSE and the differ rely on.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace loupe {

using SymbolBindings = std::map<std::string, int64_t, std::less<>>;

class SymExpr {
public:
  SymExpr() = default;    // 0
  SymExpr(int64_t value); // NOLINT: a constant converts implicitly, as in shapes {s0, 128}

  static SymExpr symbol(std::string_view name);
  // Python semantics (rounding towards negative infinity); division by a constant zero throws.
  static SymExpr floorDiv(const SymExpr& numerator, const SymExpr& denominator);
  static SymExpr mod(const SymExpr& numerator, const SymExpr& denominator);

  // Parses the text-format spelling ("2*s0 + 1", "(s0 - 3)//2 + 1", "s0**2", "s1 % 8") starting
  // at `pos`, stopping before a character that cannot continue an expression (',', ']', ...).
  // On failure throws ParseFailure with the offset of the offending character.
  struct ParseFailure {
    size_t offset;
    std::string message;
  };
  static SymExpr parse(std::string_view text, size_t& pos);
  static SymExpr parse(std::string_view text); // whole string

  friend SymExpr operator+(const SymExpr& a, const SymExpr& b);
  friend SymExpr operator-(const SymExpr& a, const SymExpr& b);
  friend SymExpr operator*(const SymExpr& a, const SymExpr& b);
  SymExpr operator-() const;
  SymExpr& operator+=(const SymExpr& other) { return *this = *this + other; }
  SymExpr& operator*=(const SymExpr& other) { return *this = *this * other; }

  bool isConstant() const {
    return terms_.empty() || (terms_.size() == 1 && terms_[0].atoms.empty());
  }
  std::optional<int64_t> constant() const;
  bool isSymbol() const; // exactly one symbol with coefficient 1
  // Whether a floor division or a modulo appears in it, at any depth.
  bool hasDivision() const;

  // Substitutes bound symbols; throws std::out_of_range naming the first unbound symbol.
  int64_t evaluate(const SymbolBindings& bindings) const;
  SymExpr substitute(const std::map<std::string, SymExpr, std::less<>>& replacements) const;
  std::vector<std::string> symbols() const; // sorted, unique, including those inside atoms

  // Exact quotient when every term divides (a product of dims divided by some of them), else
  // nullopt. Used to resolve -1 in view sizes.
  std::optional<SymExpr> exactDiv(const SymExpr& divisor) const;

  // Whether a and b are equal wherever every floor division and modulo in them divides
  // exactly: torch writes the -1 of `x.reshape(8, -1)` on [s0, 24] as 24*(s0//8) (its guards
  // make s0 a multiple of 8) where the quotient of the numel is 3*s0. Decided by evaluating
  // both at several multiples of the divisors' least common multiple (a polynomial identity
  // test; a symbolic divisor such as s0//(s0//2) is probed the same way).
  static bool equalWhenDivisionsExact(const SymExpr& a, const SymExpr& b);

  std::string str() const;
  size_t hash() const;
  friend bool operator==(const SymExpr& a, const SymExpr& b) { return a.str_ == b.str_; }
  friend bool operator<(const SymExpr& a, const SymExpr& b) { return a.str_ < b.str_; }

private:
  struct Atom;
  struct Factor {
    std::shared_ptr<const Atom> atom;
    int power = 1;
  };
  struct Term {
    int64_t coefficient = 0;
    std::vector<Factor> atoms; // sorted by atom key; empty for the constant term
    std::string monomialKey() const;
  };

  static SymExpr fromTerms(std::vector<Term> terms);
  static SymExpr fromAtom(std::shared_ptr<const Atom> atom);
  static void evaluateAtom(const Atom& atom, const SymbolBindings& bindings, int64_t& out);

  std::vector<Term> terms_; // canonical order; never holds a zero coefficient
  std::string str_ = "0";   // cached canonical spelling, also the identity
};

using Dim = SymExpr;
using Shape = std::vector<Dim>;

std::string shapeStr(const Shape& shape); // "s0,128" (no brackets)
SymExpr numel(const Shape& shape);
// Contiguous (row-major) strides of a shape, in elements.
Shape contiguousStrides(const Shape& shape);

} // namespace loupe

template <>
struct std::hash<loupe::SymExpr> {
  size_t operator()(const loupe::SymExpr& e) const { return e.hash(); }
};
