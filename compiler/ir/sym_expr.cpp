#include "compiler/ir/sym_expr.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <functional>
#include <set>
#include <stdexcept>

namespace loupe {

struct SymExpr::Atom {
  enum class Kind { Symbol, FloorDiv, Mod };
  Kind kind;
  std::string name; // Symbol
  SymExpr lhs, rhs; // FloorDiv, Mod
  std::string key;  // canonical spelling, also the sort key
};

namespace {

int64_t gcdOf(int64_t a, int64_t b) {
  while (b) {
    a %= b;
    std::swap(a, b);
  }
  return a < 0 ? -a : a;
}

int64_t floorDivInt(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t floorModInt(int64_t a, int64_t b) {
  return a - floorDivInt(a, b) * b;
}

// Dims come from untrusted text (.lir files, traces): arithmetic that leaves int64 is an error,
// never undefined behaviour, and an expression may not grow without bound.
int64_t checkedAdd(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r))
    throw std::overflow_error("dimension arithmetic overflows int64");
  return r;
}
int64_t checkedMul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    throw std::overflow_error("dimension arithmetic overflows int64");
  return r;
}
constexpr size_t kMaxTerms = 4096;

// An operand of // or % needs parentheses unless it is a lone atom or a non-negative constant.
std::string operandStr(const SymExpr& e) {
  std::string s = e.str();
  bool simple = std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(c) || c == '_'; });
  return simple ? s : "(" + s + ")";
}

} // namespace

std::string SymExpr::Term::monomialKey() const {
  std::string key;
  for (const auto& f : atoms) {
    if (!key.empty()) key += "*";
    key += f.atom->kind == Atom::Kind::Symbol ? f.atom->key : "(" + f.atom->key + ")";
    if (f.power != 1) key += "**" + std::to_string(f.power);
  }
  return key;
}

SymExpr::SymExpr(int64_t value) {
  if (value != 0) terms_.push_back(Term{value, {}});
  str_ = std::to_string(value);
}

SymExpr SymExpr::fromTerms(std::vector<Term> terms) {
  // Merge equal monomials, drop zeros, order canonically (constant term last).
  std::map<std::string, Term> merged;
  for (auto& t : terms) {
    if (t.coefficient == 0) continue;
    std::string key = t.monomialKey();
    auto [it, inserted] = merged.try_emplace(key, t);
    if (!inserted) it->second.coefficient = checkedAdd(it->second.coefficient, t.coefficient);
  }
  SymExpr e;
  e.terms_.clear();
  const Term* constantTerm = nullptr;
  for (auto& [key, t] : merged) {
    if (t.coefficient == 0) continue;
    if (t.atoms.empty())
      constantTerm = &t;
    else
      e.terms_.push_back(t);
  }
  if (constantTerm) e.terms_.push_back(*constantTerm);

  std::string s;
  for (size_t i = 0; i < e.terms_.size(); ++i) {
    const Term& t = e.terms_[i];
    int64_t c = t.coefficient;
    if (i == 0) {
      if (c < 0) s += "-";
    } else {
      s += c < 0 ? " - " : " + ";
    }
    int64_t magnitude = c < 0 ? -c : c;
    if (t.atoms.empty()) {
      s += std::to_string(magnitude);
    } else {
      if (magnitude != 1) s += std::to_string(magnitude) + "*";
      s += t.monomialKey();
    }
  }
  e.str_ = s.empty() ? "0" : s;
  return e;
}

SymExpr SymExpr::fromAtom(std::shared_ptr<const Atom> atom) {
  Term t;
  t.coefficient = 1;
  t.atoms.push_back(Factor{std::move(atom), 1});
  return fromTerms({t});
}

SymExpr SymExpr::symbol(std::string_view name) {
  auto atom = std::make_shared<Atom>();
  atom->kind = Atom::Kind::Symbol;
  atom->name = std::string(name);
  atom->key = atom->name;
  return fromAtom(std::move(atom));
}

SymExpr operator+(const SymExpr& a, const SymExpr& b) {
  std::vector<SymExpr::Term> terms = a.terms_;
  terms.insert(terms.end(), b.terms_.begin(), b.terms_.end());
  return SymExpr::fromTerms(std::move(terms));
}

SymExpr SymExpr::operator-() const {
  std::vector<Term> terms = terms_;
  for (auto& t : terms)
    t.coefficient = checkedMul(t.coefficient, -1);
  return fromTerms(std::move(terms));
}

SymExpr operator-(const SymExpr& a, const SymExpr& b) {
  return a + (-b);
}

SymExpr operator*(const SymExpr& a, const SymExpr& b) {
  if (a.terms_.size() * b.terms_.size() > kMaxTerms)
    throw std::length_error("dimension expression too large (more than " +
                            std::to_string(kMaxTerms) + " terms)");
  std::vector<SymExpr::Term> terms;
  for (const auto& x : a.terms_) {
    for (const auto& y : b.terms_) {
      SymExpr::Term t;
      t.coefficient = checkedMul(x.coefficient, y.coefficient);
      std::map<std::string, SymExpr::Factor> factors;
      for (const auto* side : {&x.atoms, &y.atoms})
        for (const auto& f : *side) {
          auto [it, inserted] = factors.try_emplace(f.atom->key, f);
          if (!inserted) it->second.power = static_cast<int>(checkedAdd(it->second.power, f.power));
        }
      for (auto& [key, f] : factors)
        t.atoms.push_back(f);
      terms.push_back(std::move(t));
    }
  }
  return SymExpr::fromTerms(std::move(terms));
}

std::optional<int64_t> SymExpr::constant() const {
  if (terms_.empty()) return 0;
  if (terms_.size() == 1 && terms_[0].atoms.empty()) return terms_[0].coefficient;
  return std::nullopt;
}

bool SymExpr::isSymbol() const {
  return terms_.size() == 1 && terms_[0].coefficient == 1 && terms_[0].atoms.size() == 1 &&
         terms_[0].atoms[0].power == 1 && terms_[0].atoms[0].atom->kind == Atom::Kind::Symbol;
}

bool SymExpr::hasDivision() const {
  for (const Term& t : terms_)
    for (const Factor& f : t.atoms)
      if (f.atom->kind != Atom::Kind::Symbol) return true;
  return false;
}

std::optional<SymExpr> SymExpr::exactDiv(const SymExpr& divisor) const {
  if (divisor == SymExpr(0)) return std::nullopt;
  if (*this == divisor) return SymExpr(1);
  if (divisor.terms_.size() != 1) return std::nullopt; // only monomial divisors
  const Term& d = divisor.terms_[0];
  std::vector<Term> quotient;
  for (const Term& t : terms_) {
    if (t.coefficient % d.coefficient != 0) return std::nullopt;
    Term q;
    q.coefficient = t.coefficient / d.coefficient;
    std::map<std::string, Factor> factors;
    for (const auto& f : t.atoms)
      factors.emplace(f.atom->key, f);
    for (const auto& f : d.atoms) {
      auto it = factors.find(f.atom->key);
      if (it == factors.end() || it->second.power < f.power) return std::nullopt;
      it->second.power -= f.power;
      if (it->second.power == 0) factors.erase(it);
    }
    for (auto& [key, f] : factors)
      q.atoms.push_back(f);
    quotient.push_back(std::move(q));
  }
  return fromTerms(std::move(quotient));
}

SymExpr SymExpr::floorDiv(const SymExpr& numerator, const SymExpr& denominator) {
  auto den = denominator.constant();
  if (den && *den == 0)
    throw std::domain_error("symbolic division by zero: " + numerator.str() + "//0");
  if (auto num = numerator.constant(); num && den) return SymExpr(floorDivInt(*num, *den));
  if (den && *den == 1) return numerator;
  if (den) {
    // floor((c*X + R) / c) == X + floor(R / c) for integer X: keep the divisible part exact.
    std::vector<Term> divisible, rest;
    for (const Term& t : numerator.terms_) {
      if (t.coefficient % *den == 0) {
        Term q = t;
        q.coefficient /= *den;
        divisible.push_back(q);
      } else {
        rest.push_back(t);
      }
    }
    SymExpr result = fromTerms(std::move(divisible));
    // floor(g*R / (g*c)) == floor(R / c): (24*s0)//48 is s0//2.
    int64_t common = *den < 0 ? -*den : *den;
    for (const Term& t : rest)
      common = gcdOf(common, t.coefficient);
    int64_t reducedDen = *den;
    if (common > 1) {
      for (Term& t : rest)
        t.coefficient /= common;
      reducedDen /= common;
    }
    SymExpr remainder = fromTerms(std::move(rest));
    if (auto r = remainder.constant()) return result + SymExpr(floorDivInt(*r, reducedDen));
    if (reducedDen == 1) return result + remainder;
    // floor(floor(X / a) / b) == floor(X / (a*b)) for positive a and b and any integer X:
    // torch prints two stride-2 stages as s0//4, Loupe's shape inference reaches (s0//2)//2.
    if (reducedDen > 0 && remainder.terms_.size() == 1) {
      const Term& only = remainder.terms_[0];
      const Atom* inner =
          only.atoms.size() == 1 && only.atoms[0].power == 1 && only.coefficient == 1
              ? only.atoms[0].atom.get()
              : nullptr;
      if (inner && inner->kind == Atom::Kind::FloorDiv) {
        auto a = inner->rhs.constant();
        if (a && *a > 0) return result + floorDiv(inner->lhs, SymExpr(*a) * SymExpr(reducedDen));
      }
    }
    auto atom = std::make_shared<Atom>();
    atom->kind = Atom::Kind::FloorDiv;
    atom->lhs = remainder;
    atom->rhs = SymExpr(reducedDen);
    atom->key = operandStr(remainder) + "//" + operandStr(atom->rhs);
    return result + fromAtom(std::move(atom));
  }
  if (auto q = numerator.exactDiv(denominator)) return *q;
  // (s1*s0)//(2*s1) is s0//2: a symbolic factor of the denominator that divides every term of
  // the numerator cancels (dims are positive).
  if (denominator.terms_.size() == 1 && !denominator.terms_[0].atoms.empty()) {
    Term monomial = denominator.terms_[0];
    int64_t coefficient = monomial.coefficient;
    monomial.coefficient = 1;
    if (auto q = numerator.exactDiv(fromTerms({monomial})))
      return floorDiv(*q, SymExpr(coefficient));
  }
  auto atom = std::make_shared<Atom>();
  atom->kind = Atom::Kind::FloorDiv;
  atom->lhs = numerator;
  atom->rhs = denominator;
  atom->key = operandStr(numerator) + "//" + operandStr(denominator);
  return fromAtom(std::move(atom));
}

SymExpr SymExpr::mod(const SymExpr& numerator, const SymExpr& denominator) {
  auto den = denominator.constant();
  if (den && *den == 0)
    throw std::domain_error("symbolic modulo by zero: " + numerator.str() + "%0");
  if (auto num = numerator.constant(); num && den) return SymExpr(floorModInt(*num, *den));
  SymExpr remainder = numerator;
  if (den) {
    std::vector<Term> rest;
    for (const Term& t : numerator.terms_)
      if (t.coefficient % *den != 0) rest.push_back(t);
    remainder = fromTerms(std::move(rest));
    if (auto r = remainder.constant()) return SymExpr(floorModInt(*r, *den));
  } else if (numerator.exactDiv(denominator)) {
    return SymExpr(0);
  }
  auto atom = std::make_shared<Atom>();
  atom->kind = Atom::Kind::Mod;
  atom->lhs = remainder;
  atom->rhs = denominator;
  atom->key = operandStr(remainder) + "%" + operandStr(denominator);
  return fromAtom(std::move(atom));
}

void SymExpr::evaluateAtom(const Atom& atom, const SymbolBindings& bindings, int64_t& out) {
  switch (atom.kind) {
  case Atom::Kind::Symbol: {
    auto it = bindings.find(atom.name);
    if (it == bindings.end()) throw std::out_of_range("unbound symbol '" + atom.name + "'");
    out = it->second;
    return;
  }
  case Atom::Kind::FloorDiv:
  case Atom::Kind::Mod: {
    int64_t a = atom.lhs.evaluate(bindings), b = atom.rhs.evaluate(bindings);
    if (b == 0) throw std::domain_error("division by zero evaluating " + atom.key);
    out = atom.kind == Atom::Kind::FloorDiv ? floorDivInt(a, b) : floorModInt(a, b);
    return;
  }
  }
}

int64_t SymExpr::evaluate(const SymbolBindings& bindings) const {
  int64_t sum = 0;
  for (const Term& t : terms_) {
    int64_t product = t.coefficient;
    for (const auto& f : t.atoms) {
      int64_t v = 0;
      evaluateAtom(*f.atom, bindings, v);
      for (int p = 0; p < f.power; ++p)
        product = checkedMul(product, v);
    }
    sum = checkedAdd(sum, product);
  }
  return sum;
}

bool SymExpr::equalWhenDivisionsExact(const SymExpr& a, const SymExpr& b) {
  if (a == b) return true;
  // The least common multiple of every constant divisor, at any depth.
  int64_t lcm = 1;
  bool symbolicDivisor = false;
  std::function<void(const SymExpr&)> collect = [&](const SymExpr& e) {
    for (const Term& t : e.terms_)
      for (const Factor& f : t.atoms) {
        if (f.atom->kind == Atom::Kind::Symbol) continue;
        collect(f.atom->lhs);
        collect(f.atom->rhs);
        auto divisor = f.atom->rhs.constant();
        if (!divisor) continue; // s0//(s0//2): probed at the multiples of the inner divisors
        if (*divisor == 0) {
          symbolicDivisor = true;
          continue;
        }
        int64_t d = *divisor < 0 ? -*divisor : *divisor;
        lcm = lcm / gcdOf(lcm, d) * d;
        if (lcm > (int64_t{1} << 20)) symbolicDivisor = true; // too large to probe safely
      }
  };
  collect(a);
  collect(b);
  if (symbolicDivisor) return false;
  std::vector<std::string> names = a.symbols();
  for (const std::string& name : b.symbols())
    names.push_back(name);
  // Symbols at pseudo-random multiples of the lcm: two different polynomials of small degree
  // agree on all of these only with negligible probability.
  uint64_t state = 0x9e3779b97f4a7c15ULL;
  try {
    for (int probe = 0; probe < 8; ++probe) {
      SymbolBindings bindings;
      for (const std::string& name : names) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        bindings[name] = lcm * static_cast<int64_t>(1 + (state >> 33) % 97);
      }
      if (a.evaluate(bindings) != b.evaluate(bindings)) return false;
    }
  } catch (const std::exception&) {
    return false; // overflow or a division by zero: not shown equal
  }
  return true;
}

SymExpr SymExpr::substitute(const std::map<std::string, SymExpr, std::less<>>& replacements) const {
  SymExpr sum;
  for (const Term& t : terms_) {
    SymExpr product(t.coefficient);
    for (const auto& f : t.atoms) {
      SymExpr base;
      const Atom& a = *f.atom;
      if (a.kind == Atom::Kind::Symbol) {
        auto it = replacements.find(a.name);
        base = it == replacements.end() ? symbol(a.name) : it->second;
      } else {
        SymExpr l = a.lhs.substitute(replacements), r = a.rhs.substitute(replacements);
        base = a.kind == Atom::Kind::FloorDiv ? floorDiv(l, r) : mod(l, r);
      }
      for (int p = 0; p < f.power; ++p)
        product = product * base;
    }
    sum = sum + product;
  }
  return sum;
}

std::vector<std::string> SymExpr::symbols() const {
  std::set<std::string> names;
  std::function<void(const SymExpr&)> collect = [&](const SymExpr& e) {
    for (const Term& t : e.terms_)
      for (const auto& f : t.atoms) {
        if (f.atom->kind == Atom::Kind::Symbol) {
          names.insert(f.atom->name);
        } else {
          collect(f.atom->lhs);
          collect(f.atom->rhs);
        }
      }
  };
  collect(*this);
  return {names.begin(), names.end()};
}

std::string SymExpr::str() const {
  return str_;
}

size_t SymExpr::hash() const {
  return std::hash<std::string>{}(str_);
}

// ---- parsing ------------------------------------------------------------------------------

namespace {

struct SymParser {
  std::string_view text;
  size_t pos;

  [[noreturn]] void fail(const std::string& message) const {
    throw SymExpr::ParseFailure{pos, message};
  }
  void skipSpace() {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t'))
      ++pos;
  }
  bool peek(std::string_view token) {
    skipSpace();
    return text.substr(pos, token.size()) == token;
  }
  bool accept(std::string_view token) {
    if (!peek(token)) return false;
    pos += token.size();
    return true;
  }

  SymExpr expr() {
    SymExpr e = term();
    for (;;) {
      if (accept("+"))
        e = e + term();
      else if (accept("-"))
        e = e - term();
      else
        return e;
    }
  }
  SymExpr term() {
    SymExpr e = unary();
    for (;;) {
      if (peek("**")) fail("'**' must follow a symbol, a number or a parenthesis");
      if (accept("//"))
        e = SymExpr::floorDiv(e, unary());
      else if (accept("*"))
        e = e * unary();
      else if (accept("%"))
        e = SymExpr::mod(e, unary());
      else
        return e;
    }
  }
  SymExpr unary() {
    if (accept("-")) return -unary();
    SymExpr base = primary();
    if (accept("**")) {
      skipSpace();
      size_t start = pos;
      while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos])))
        ++pos;
      if (start == pos) fail("expected an integer exponent after '**'");
      if (pos - start > 2 || std::atoi(std::string(text.substr(start, pos - start)).c_str()) > 64)
        fail("exponent larger than 64");
      int power = std::atoi(std::string(text.substr(start, pos - start)).c_str());
      SymExpr result(1);
      for (int i = 0; i < power; ++i)
        result = result * base;
      return result;
    }
    return base;
  }
  SymExpr primary() {
    skipSpace();
    if (pos >= text.size()) fail("expected a dimension (integer, symbol or parenthesis)");
    char c = text[pos];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t start = pos;
      while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos])))
        ++pos;
      std::string digits(text.substr(start, pos - start));
      errno = 0;
      long long v = std::strtoll(digits.c_str(), nullptr, 10);
      if (errno == ERANGE) {
        pos = start;
        fail("integer out of range: " + digits);
      }
      return SymExpr(static_cast<int64_t>(v));
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t start = pos;
      while (pos < text.size() &&
             (std::isalnum(static_cast<unsigned char>(text[pos])) || text[pos] == '_'))
        ++pos;
      return SymExpr::symbol(text.substr(start, pos - start));
    }
    if (c == '(') {
      ++pos;
      SymExpr inner = expr();
      if (!accept(")")) fail("expected ')'");
      return inner;
    }
    fail(std::string("expected a dimension (integer, symbol or parenthesis), found '") + c + "'");
  }
};

} // namespace

SymExpr SymExpr::parse(std::string_view text, size_t& pos) {
  SymParser parser{text, pos};
  try {
    SymExpr e = parser.expr();
    pos = parser.pos;
    return e;
  } catch (const std::domain_error& e) {
    throw ParseFailure{parser.pos, e.what()};
  } catch (const std::overflow_error& e) {
    throw ParseFailure{parser.pos, e.what()};
  } catch (const std::length_error& e) {
    throw ParseFailure{parser.pos, e.what()};
  }
}

SymExpr SymExpr::parse(std::string_view text) {
  size_t pos = 0;
  SymExpr e = parse(text, pos);
  while (pos < text.size() && text[pos] == ' ')
    ++pos;
  if (pos != text.size()) throw ParseFailure{pos, "unexpected '" + std::string(1, text[pos]) + "'"};
  return e;
}

// ---- shapes -------------------------------------------------------------------------------

std::string shapeStr(const Shape& shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ",";
    s += shape[i].str();
  }
  return s;
}

SymExpr numel(const Shape& shape) {
  SymExpr n(1);
  for (const auto& d : shape)
    n = n * d;
  return n;
}

Shape contiguousStrides(const Shape& shape) {
  Shape strides(shape.size());
  SymExpr running(1);
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = running;
    running = running * shape[i];
  }
  return strides;
}

} // namespace loupe
