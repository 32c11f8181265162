// Node attributes: the non-tensor arguments of an op (dims=[1,0], alpha=1, dtype=f32).
//
// Integers are SymExprs, so sizes and slice bounds may be symbolic (sizes=[s0,128]); a
// constant integer is just a constant SymExpr. AttrMap keeps names sorted, so printing is
// deterministic and two nodes with the same attributes compare equal (CSE relies on it).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "compiler/ir/dtype.h"
#include "compiler/ir/sym_expr.h"

namespace loupe {

struct NoneAttr {
  friend bool operator==(NoneAttr, NoneAttr) { return true; }
};

using IntList = std::vector<SymExpr>;
using FloatList = std::vector<double>;
using BoolList = std::vector<bool>;

// none | true/false | int (symbolic) | float | "string" | dtype | [ints] | [floats] | [bools]
using Attribute =
    std::variant<NoneAttr, bool, SymExpr, double, std::string, DType, IntList, FloatList, BoolList>;

// .lir spelling of a value: floats always carry '.', 'e', inf or nan so they parse back as floats.
std::string attributeStr(const Attribute& value);
std::string formatFloat(double value); // shortest spelling that round-trips exactly

class AttrMap {
public:
  using Storage = std::map<std::string, Attribute, std::less<>>;

  bool has(std::string_view name) const { return values_.count(name) != 0; }
  const Attribute* find(std::string_view name) const;
  void set(std::string name, Attribute value) { values_[std::move(name)] = std::move(value); }
  void erase(std::string_view name);

  // Typed getters throw Error("attribute", ...) naming the attribute when it is missing or of
  // another kind. getInt requires a constant; getDim accepts symbols. getFloat accepts ints.
  int64_t getInt(std::string_view name) const;
  int64_t getInt(std::string_view name, int64_t fallback) const;
  SymExpr getDim(std::string_view name) const;
  double getFloat(std::string_view name) const;
  double getFloat(std::string_view name, double fallback) const;
  bool getBool(std::string_view name) const;
  bool getBool(std::string_view name, bool fallback) const;
  const std::string& getString(std::string_view name) const;
  DType getDType(std::string_view name) const;
  std::optional<DType> getOptionalDType(std::string_view name) const; // missing or none → nullopt
  std::vector<int64_t> getInts(std::string_view name) const;          // constants only
  const IntList& getDims(std::string_view name) const;
  FloatList getFloats(std::string_view name) const;
  BoolList getBools(std::string_view name) const;
  bool isNone(std::string_view name) const; // missing counts as none

  // Every SymExpr inside (ints and int lists) with symbols replaced by their values.
  AttrMap bound(const SymbolBindings& bindings) const;

  const Storage& values() const { return values_; }
  bool empty() const { return values_.empty(); }
  friend bool operator==(const AttrMap&, const AttrMap&) = default;

private:
  Storage values_;
};

} // namespace loupe
