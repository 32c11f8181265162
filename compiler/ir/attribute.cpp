#include "compiler/ir/attribute.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "compiler/ir/error.h"

namespace loupe {

std::string formatFloat(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buffer[64];
  // The shortest of %.{1..17}g that reads back to the same double.
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof buffer, "%.*g", precision, value);
    if (std::strtod(buffer, nullptr) == value) break;
  }
  std::string s = buffer;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

namespace {

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      if (static_cast<unsigned char>(c) < 0x20) {
        char esc[8];
        std::snprintf(esc, sizeof esc, "\\x%02x", static_cast<unsigned char>(c));
        out += esc;
      } else {
        out += c;
      }
    }
  }
  return out + "\"";
}

template <typename T, typename F>
std::string listStr(const std::vector<T>& items, F&& itemStr) {
  std::string s = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) s += ", ";
    s += itemStr(items[i]);
  }
  return s + "]";
}

} // namespace

std::string attributeStr(const Attribute& value) {
  struct Printer {
    std::string operator()(NoneAttr) const { return "none"; }
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(const SymExpr& e) const { return e.str(); }
    std::string operator()(double d) const { return formatFloat(d); }
    std::string operator()(const std::string& s) const { return quote(s); }
    std::string operator()(DType t) const { return std::string(dtypeName(t)); }
    std::string operator()(const IntList& l) const {
      return listStr(l, [](const SymExpr& e) { return e.str(); });
    }
    std::string operator()(const FloatList& l) const { return listStr(l, formatFloat); }
    std::string operator()(const BoolList& l) const {
      return listStr(l, [](bool b) { return std::string(b ? "true" : "false"); });
    }
  };
  return std::visit(Printer{}, value);
}

const Attribute* AttrMap::find(std::string_view name) const {
  auto it = values_.find(name);
  return it == values_.end() ? nullptr : &it->second;
}

void AttrMap::erase(std::string_view name) {
  auto it = values_.find(name);
  if (it != values_.end()) values_.erase(it);
}

namespace {

[[noreturn]] void attributeError(std::string_view name, const std::string& problem) {
  throw Error("attribute", "attribute '" + std::string(name) + "' " + problem);
}

template <typename T>
const T& getAs(const AttrMap& attrs, std::string_view name, const char* kindName) {
  const Attribute* a = attrs.find(name);
  if (!a) attributeError(name, "is missing");
  if (const T* v = std::get_if<T>(a)) return *v;
  attributeError(name, std::string("should be ") + kindName + ", found " + attributeStr(*a));
}

int64_t constantOf(std::string_view name, const SymExpr& e) {
  auto c = e.constant();
  if (!c) attributeError(name, "must be a constant integer here, found " + e.str());
  return *c;
}

} // namespace

int64_t AttrMap::getInt(std::string_view name) const {
  if (const Attribute* a = find(name); a && std::holds_alternative<bool>(*a))
    return std::get<bool>(*a) ? 1 : 0;
  return constantOf(name, getAs<SymExpr>(*this, name, "an integer"));
}

int64_t AttrMap::getInt(std::string_view name, int64_t fallback) const {
  return isNone(name) ? fallback : getInt(name);
}

SymExpr AttrMap::getDim(std::string_view name) const {
  return getAs<SymExpr>(*this, name, "an integer");
}

double AttrMap::getFloat(std::string_view name) const {
  const Attribute* a = find(name);
  if (!a) attributeError(name, "is missing");
  if (const double* d = std::get_if<double>(a)) return *d;
  if (const SymExpr* e = std::get_if<SymExpr>(a)) return static_cast<double>(constantOf(name, *e));
  if (const bool* b = std::get_if<bool>(a)) return *b ? 1.0 : 0.0;
  attributeError(name, "should be a number, found " + attributeStr(*a));
}

double AttrMap::getFloat(std::string_view name, double fallback) const {
  return isNone(name) ? fallback : getFloat(name);
}

bool AttrMap::getBool(std::string_view name) const {
  return getAs<bool>(*this, name, "a bool");
}

bool AttrMap::getBool(std::string_view name, bool fallback) const {
  return isNone(name) ? fallback : getBool(name);
}

const std::string& AttrMap::getString(std::string_view name) const {
  return getAs<std::string>(*this, name, "a string");
}

DType AttrMap::getDType(std::string_view name) const {
  return getAs<DType>(*this, name, "a dtype");
}

std::optional<DType> AttrMap::getOptionalDType(std::string_view name) const {
  if (isNone(name)) return std::nullopt;
  return getDType(name);
}

std::vector<int64_t> AttrMap::getInts(std::string_view name) const {
  std::vector<int64_t> out;
  for (const auto& e : getDims(name))
    out.push_back(constantOf(name, e));
  return out;
}

const IntList& AttrMap::getDims(std::string_view name) const {
  static const IntList kEmpty;
  const Attribute* a = find(name);
  // An empty list parses as an IntList; accept an empty float/bool list for robustness.
  if (a && std::holds_alternative<FloatList>(*a) && std::get<FloatList>(*a).empty()) return kEmpty;
  return getAs<IntList>(*this, name, "a list of integers");
}

FloatList AttrMap::getFloats(std::string_view name) const {
  const Attribute* a = find(name);
  if (a && std::holds_alternative<IntList>(*a)) {
    FloatList out;
    for (const auto& e : std::get<IntList>(*a))
      out.push_back(static_cast<double>(constantOf(name, e)));
    return out;
  }
  return getAs<FloatList>(*this, name, "a list of floats");
}

BoolList AttrMap::getBools(std::string_view name) const {
  const Attribute* a = find(name);
  if (a && std::holds_alternative<IntList>(*a) && std::get<IntList>(*a).empty()) return {};
  return getAs<BoolList>(*this, name, "a list of bools");
}

bool AttrMap::isNone(std::string_view name) const {
  const Attribute* a = find(name);
  return !a || std::holds_alternative<NoneAttr>(*a);
}

AttrMap AttrMap::bound(const SymbolBindings& bindings) const {
  AttrMap out = *this;
  for (auto& [name, value] : out.values_) {
    if (auto* e = std::get_if<SymExpr>(&value)) {
      if (!e->isConstant()) *e = SymExpr(e->evaluate(bindings));
    } else if (auto* list = std::get_if<IntList>(&value)) {
      for (auto& item : *list)
        if (!item.isConstant()) item = SymExpr(item.evaluate(bindings));
    }
  }
  return out;
}

} // namespace loupe
