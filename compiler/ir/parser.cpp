// The .lir parser: a recursive-descent reader over the raw text, following the grammar in
// docs/lir-format.md. Dimensions and integer attributes are read by SymExpr::parse so that
// the parser and SymExpr::str() agree on one expression syntax.
//
// Any input must end in a graph or an Error("parse") with the offending line and column,
// never in a crash or a hang: inputs are untrusted (files from other people, fuzzers), so
// nesting and exponents are bounded before they reach recursive code.
#include "compiler/ir/parser.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <unordered_map>

#include "compiler/ir/error.h"

namespace loupe {

namespace {

constexpr int kMaxNesting = 200;     // fused bodies within bodies, parentheses within a dim
constexpr int64_t kMaxExponent = 64; // s0**N expands by repeated multiplication

bool isWordStart(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool isNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
}
bool isDigit(char c) {
  return std::isdigit(static_cast<unsigned char>(c));
}

// The names visible in one graph: a fused body is isolated from the graph around it.
using Scope = std::unordered_map<std::string, Value*>;

class Parser {
public:
  Parser(std::string_view text, std::string fileName) : text_(text), file_(std::move(fileName)) {
    lineStarts_.push_back(0);
    for (size_t i = 0; i < text_.size(); ++i)
      if (text_[i] == '\n') lineStarts_.push_back(i + 1);
  }

  std::vector<std::unique_ptr<Graph>> module() {
    std::vector<std::unique_ptr<Graph>> graphs;
    do {
      graphs.push_back(graph());
      skipTrivia();
    } while (!atEnd());
    return graphs;
  }

private:
  // ---- errors ---------------------------------------------------------------------------

  [[noreturn]] void fail(size_t offset, const std::string& message) const {
    auto line = std::upper_bound(lineStarts_.begin(), lineStarts_.end(), offset) - 1;
    throw Error("parse", message,
                ErrorContext{.file = file_,
                             .line = static_cast<int>(line - lineStarts_.begin()) + 1,
                             .column = static_cast<int>(offset - *line) + 1});
  }

  // What the text holds at `offset`, for "found ..." in messages: a word, a name, or a char.
  std::string describe(size_t offset) const {
    if (offset >= text_.size()) return "end of input";
    size_t end = offset;
    if (text_[offset] == '%' || text_[offset] == '@') ++end;
    while (end < text_.size() && end - offset < 24 && isNameChar(text_[end]))
      ++end;
    if (end == offset || (end == offset + 1 && !isNameChar(text_[offset]))) {
      unsigned char c = static_cast<unsigned char>(text_[offset]);
      if (c < 0x20 || c >= 0x7f) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "\\x%02x", c);
        return std::string("byte '") + hex + "'";
      }
      return "'" + std::string(1, text_[offset]) + "'";
    }
    return "'" + std::string(text_.substr(offset, end - offset)) + "'";
  }

  [[noreturn]] void expected(const std::string& what) {
    skipTrivia();
    fail(pos_, "expected " + what + ", found " + describe(pos_));
  }

  // ---- characters and tokens -----------------------------------------------------------

  bool atEnd() const { return pos_ >= text_.size(); }

  void skipTrivia() {
    while (!atEnd()) {
      if (std::isspace(static_cast<unsigned char>(text_[pos_]))) {
        ++pos_;
      } else if (text_.substr(pos_, 2) == "//") {
        while (!atEnd() && text_[pos_] != '\n')
          ++pos_;
      } else {
        return;
      }
    }
  }

  // Where the next token starts.
  size_t here() {
    skipTrivia();
    return pos_;
  }

  char peek() {
    skipTrivia();
    return atEnd() ? '\0' : text_[pos_];
  }

  bool accept(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }

  void expect(char c, const std::string& context) {
    if (!accept(c)) expected("'" + std::string(1, c) + "' " + context);
  }

  // [A-Za-z_][A-Za-z0-9_.]*, or "" when the text does not start a word here.
  std::string word() {
    skipTrivia();
    if (atEnd() || !isWordStart(text_[pos_])) return {};
    size_t start = pos_;
    while (!atEnd() && isNameChar(text_[pos_]))
      ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }

  bool acceptKeyword(std::string_view keyword) {
    skipTrivia();
    size_t end = pos_ + keyword.size();
    if (text_.substr(pos_, keyword.size()) != keyword ||
        (end < text_.size() && isNameChar(text_[end])))
      return false;
    pos_ = end;
    return true;
  }

  void expectKeyword(std::string_view keyword, const std::string& context) {
    if (!acceptKeyword(keyword)) expected("'" + std::string(keyword) + "' " + context);
  }

  std::string string() {
    skipTrivia();
    size_t start = pos_;
    if (!accept('"')) expected("a string");
    std::string out;
    for (;;) {
      if (atEnd() || text_[pos_] == '\n') fail(start, "unterminated string");
      char c = text_[pos_++];
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (atEnd()) fail(start, "unterminated string");
      char e = text_[pos_++];
      switch (e) {
      case '"':
        out += '"';
        break;
      case '\\':
        out += '\\';
        break;
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'x': {
        auto hexDigit = [&](size_t at) -> int {
          if (at >= text_.size() || !std::isxdigit(static_cast<unsigned char>(text_[at])))
            return -1;
          char h = static_cast<char>(std::tolower(static_cast<unsigned char>(text_[at])));
          return isDigit(h) ? h - '0' : h - 'a' + 10;
        };
        int hi = hexDigit(pos_), lo = hexDigit(pos_ + 1);
        if (hi < 0 || lo < 0) fail(pos_ - 2, "expected two hex digits after '\\x' in string");
        out += static_cast<char>(hi * 16 + lo);
        pos_ += 2;
        break;
      }
      default:
        fail(pos_ - 2, "unknown escape '\\" + std::string(1, e) +
                           "' in string (use \\\" \\\\ \\n \\t or \\xHH)");
      }
    }
  }

  // A name after '%' or '@': bare [A-Za-z0-9_][A-Za-z0-9_.]* or a quoted string.
  std::string name(const std::string& what) {
    skipTrivia();
    size_t start = pos_;
    if (peek() == '"') {
      std::string n = string();
      if (n.empty()) fail(start, "empty " + what);
      return n;
    }
    while (!atEnd() && isNameChar(text_[pos_]))
      ++pos_;
    if (pos_ == start || text_[start] == '.') {
      pos_ = start;
      expected(what);
    }
    return std::string(text_.substr(start, pos_ - start));
  }

  int64_t integer(const std::string& what) {
    skipTrivia();
    size_t start = pos_;
    bool negative = accept('-');
    if (atEnd() || !isDigit(text_[pos_])) {
      pos_ = start;
      expected(what);
    }
    int64_t value = 0;
    while (!atEnd() && isDigit(text_[pos_])) {
      int digit = text_[pos_++] - '0';
      if (value > (std::numeric_limits<int64_t>::max() - digit) / 10)
        fail(start,
             "integer out of range: " + std::string(text_.substr(start, pos_ - start)) + "...");
      value = value * 10 + digit;
    }
    return negative ? -value : value;
  }

  int smallInteger(const std::string& what) {
    size_t start = here();
    int64_t value = integer(what);
    if (value < std::numeric_limits<int>::min() || value > std::numeric_limits<int>::max())
      fail(start, "integer out of range: " + std::to_string(value));
    return static_cast<int>(value);
  }

  // ---- dimensions ------------------------------------------------------------------------

  // SymExpr::parse recurses on parentheses and multiplies out powers: bound both first.
  void checkExpressionBounds() const {
    int depth = 0, minuses = 0;
    for (size_t i = pos_; i < text_.size(); ++i) {
      char c = text_[i];
      // Each unary minus is a recursion level too; no real dimension has this many.
      if ((c == '(' && ++depth > kMaxNesting) || (c == '-' && ++minuses > kMaxNesting))
        fail(i, "expression nested too deeply");
      if (c == ')') --depth;
      if (c == '*' && i + 1 < text_.size() && text_[i + 1] == '*') {
        size_t d = i + 2;
        while (d < text_.size() && (text_[d] == ' ' || text_[d] == '\t'))
          ++d;
        int64_t exponent = 0;
        for (; d < text_.size() && isDigit(text_[d]) && exponent <= kMaxExponent; ++d)
          exponent = exponent * 10 + (text_[d] - '0');
        if (exponent > kMaxExponent)
          fail(i, "exponent too large (at most " + std::to_string(kMaxExponent) + ")");
        i = d - 1;
      } else if (c == '\0' || (!isNameChar(c) && !std::strchr(" \t()+-*/%", c))) {
        return;
      }
    }
  }

  SymExpr dim() {
    skipTrivia();
    // The most negative int64 prints as a literal whose magnitude is out of range by one.
    static const std::string kInt64Min = std::to_string(std::numeric_limits<int64_t>::min());
    size_t after = pos_ + kInt64Min.size();
    if (text_.substr(pos_, kInt64Min.size()) == kInt64Min &&
        (after == text_.size() ||
         !(isNameChar(text_[after]) || std::strchr("*/%", text_[after])))) {
      pos_ = after;
      return SymExpr(std::numeric_limits<int64_t>::min());
    }
    checkExpressionBounds();
    try {
      return SymExpr::parse(text_, pos_);
    } catch (const SymExpr::ParseFailure& failure) {
      fail(failure.offset, failure.message);
    }
  }

  Shape dims(const std::string& context) {
    expect('[', context);
    Shape shape;
    if (accept(']')) return shape;
    do {
      shape.push_back(dim());
    } while (accept(','));
    expect(']', "to close the dimension list");
    return shape;
  }

  // ---- types -----------------------------------------------------------------------------

  Type type() {
    skipTrivia();
    size_t start = pos_;
    std::string w = word();
    if (w.empty()) expected("a type");
    if (w == "index") {
      expect('<', "after 'index'");
      SymExpr value = dim();
      expect('>', "to close index<...>");
      return Type::index(value);
    }
    auto dtype = parseDType(w);
    if (!dtype) fail(start, "unknown dtype '" + w + "'");
    TensorType tensor;
    tensor.dtype = *dtype;
    tensor.shape = dims("after the dtype");
    if (accept('<')) {
      do {
        skipTrivia();
        size_t at = pos_;
        std::string extra = word();
        if (extra == "strides") {
          expect('=', "after 'strides'");
          size_t stridesAt = pos_;
          tensor.strides = dims("for strides");
          if (tensor.strides->size() != tensor.shape.size())
            fail(stridesAt, "strides has " + std::to_string(tensor.strides->size()) +
                                " entries but the shape has " +
                                std::to_string(tensor.shape.size()) + " dimensions");
        } else if (extra == "cpu") {
          tensor.device = Device{};
        } else if (extra == "cuda") {
          expect(':', "after 'cuda'");
          tensor.device = Device{Device::Kind::CUDA, smallInteger("a device index")};
        } else {
          pos_ = at;
          expected("strides=[...], cpu or cuda:N in a tensor type");
        }
      } while (accept(','));
      expect('>', "to close the tensor type");
    }
    return tensor;
  }

  std::vector<Type> typeList(const std::string& context) {
    expect('(', context);
    std::vector<Type> types;
    if (accept(')')) return types;
    do {
      types.push_back(type());
    } while (accept(','));
    expect(')', "to close the type list");
    return types;
  }

  // ---- attributes ------------------------------------------------------------------------

  // Floats always carry '.', an exponent, inf or nan; anything else numeric is an integer.
  std::optional<double> floatLiteral() {
    skipTrivia();
    size_t start = pos_, p = pos_;
    if (p < text_.size() && text_[p] == '-') ++p;
    for (std::string_view special : {"inf", "nan"}) {
      size_t end = p + special.size();
      if (text_.substr(p, special.size()) == special &&
          (end >= text_.size() || !isNameChar(text_[end]))) {
        pos_ = end;
        double value = special == "inf" ? std::numeric_limits<double>::infinity()
                                        : std::numeric_limits<double>::quiet_NaN();
        return p > start ? -value : value;
      }
    }
    size_t digits = p;
    while (p < text_.size() && isDigit(text_[p]))
      ++p;
    if (p == digits) return std::nullopt;
    bool isFloat = false;
    if (p < text_.size() && text_[p] == '.') {
      isFloat = true;
      ++p;
      while (p < text_.size() && isDigit(text_[p]))
        ++p;
    }
    if (p < text_.size() && (text_[p] == 'e' || text_[p] == 'E')) {
      size_t q = p + 1;
      if (q < text_.size() && (text_[q] == '+' || text_[q] == '-')) ++q;
      if (q < text_.size() && isDigit(text_[q])) {
        isFloat = true;
        p = q;
        while (p < text_.size() && isDigit(text_[p]))
          ++p;
      }
    }
    if (!isFloat) return std::nullopt;
    std::string literal(text_.substr(start, p - start));
    errno = 0;
    double value = std::strtod(literal.c_str(), nullptr);
    if (errno == ERANGE && std::isinf(value)) fail(start, "float out of range: " + literal);
    pos_ = p;
    return value;
  }

  Attribute scalarAttribute() {
    skipTrivia();
    if (peek() == '"') return string();
    if (auto f = floatLiteral()) return *f;
    size_t start = pos_;
    std::string w = word();
    if (w == "none") return NoneAttr{};
    if (w == "true" || w == "false") return w == "true";
    if (auto dtype = parseDType(w)) return *dtype;
    pos_ = start; // a symbol: the start of an integer expression
    if (std::strchr("[{,}]", peek())) expected("an attribute value"); // also at the end: '\0'
    return dim();
  }

  // A list's kind follows its elements: any float makes a float list, `[]` is an int list.
  Attribute listAttribute() {
    size_t open = pos_ - 1;
    std::vector<std::pair<size_t, Attribute>> items; // offset, element
    if (!accept(']')) {
      do {
        skipTrivia();
        size_t at = pos_;
        items.emplace_back(at, scalarAttribute());
      } while (accept(','));
      expect(']', "to close the list");
    }
    size_t bools = 0, floats = 0;
    for (const auto& [at, item] : items) {
      bools += std::holds_alternative<bool>(item);
      floats += std::holds_alternative<double>(item);
      if (!std::holds_alternative<bool>(item) && !std::holds_alternative<double>(item) &&
          !std::holds_alternative<SymExpr>(item))
        fail(at, "list elements must be integers, floats or bools, found " + attributeStr(item));
    }
    if (bools && bools != items.size()) fail(open, "a list cannot mix bools with numbers");
    if (bools) {
      BoolList list;
      for (const auto& item : items)
        list.push_back(std::get<bool>(item.second));
      return list;
    }
    if (!floats) {
      IntList list;
      for (const auto& item : items)
        list.push_back(std::get<SymExpr>(item.second));
      return list;
    }
    FloatList list;
    for (const auto& [at, item] : items) {
      if (const double* d = std::get_if<double>(&item)) {
        list.push_back(*d);
        continue;
      }
      auto c = std::get<SymExpr>(item).constant();
      if (!c)
        fail(at,
             "a list of floats cannot hold the symbolic integer " + std::get<SymExpr>(item).str());
      list.push_back(static_cast<double>(*c));
    }
    return list;
  }

  AttrMap attributes() {
    AttrMap attrs;
    if (accept('}')) return attrs;
    do {
      skipTrivia();
      size_t at = pos_;
      std::string n = peek() == '"' ? string() : word();
      if (n.empty()) expected("an attribute name");
      if (attrs.has(n)) fail(at, "attribute '" + n + "' is given twice");
      expect('=', "after attribute name '" + n + "'");
      attrs.set(n, accept('[') ? listAttribute() : scalarAttribute());
    } while (accept(','));
    expect('}', "to close the attributes");
    return attrs;
  }

  // ---- values ----------------------------------------------------------------------------

  struct Definition {
    std::string name;
    size_t offset;
  };

  Definition valueDefinition(const Scope& scope) {
    skipTrivia();
    size_t at = pos_;
    if (!accept('%')) expected("a value name (%name)");
    std::string n = name("a value name after '%'");
    if (scope.count(n)) fail(at, "value %" + n + " is defined twice");
    return {n, at};
  }

  Value* valueUse(const Scope& scope) {
    skipTrivia();
    size_t at = pos_;
    if (!accept('%')) expected("a value (%name)");
    std::string n = name("a value name after '%'");
    auto it = scope.find(n);
    if (it == scope.end()) fail(at, "use of undefined value %" + n);
    return it->second;
  }

  std::vector<Value*> operands(const Scope& scope) {
    std::vector<Value*> values;
    if (accept(')')) return values;
    do {
      if (acceptKeyword("none"))
        values.push_back(nullptr);
      else if (peek() == '%')
        values.push_back(valueUse(scope));
      else
        expected("an operand (%name or none)");
    } while (accept(','));
    expect(')', "to close the operands");
    return values;
  }

  // `(%a: type, ...)` declaring the inputs of a graph or a fused body.
  void inputs(Graph& graph, Scope& scope, const std::string& context) {
    expect('(', context);
    if (accept(')')) return;
    do {
      Definition d = valueDefinition(scope);
      expect(':', "after input %" + d.name);
      scope[d.name] = graph.addInput(type(), d.name);
    } while (accept(','));
    expect(')', "to close the inputs");
  }

  // ---- graphs ----------------------------------------------------------------------------

  std::unique_ptr<Graph> graph() {
    expectKeyword("graph", "to start a graph");
    expect('@', "before the graph name");
    auto g = std::make_unique<Graph>(name("a graph name after '@'"));
    Scope scope;
    inputs(*g, scope, "to open the graph inputs");
    skipTrivia();
    if (text_.substr(pos_, 2) != "->") expected("'->' before the output types");
    pos_ += 2;
    std::vector<Type> outputTypes = typeList("to open the output types");
    expect('{', "to open the graph body");
    TerminatorPosition returned = block(*g, scope, "return");
    const auto& outs = g->outputs();
    if (outs.size() != outputTypes.size())
      fail(returned.keyword, "graph @" + g->name() + " returns " + std::to_string(outs.size()) +
                                 " values but its signature declares " +
                                 std::to_string(outputTypes.size()) + " output types");
    for (size_t i = 0; i < outs.size(); ++i)
      if (outs[i]->type() != outputTypes[i])
        fail(returned.values[i], "returned value %" + outs[i]->name() + " has type " +
                                     outs[i]->type().str() + " but the signature declares " +
                                     outputTypes[i].str());
    return g;
  }

  // Where a block's terminator and each of its values are, for errors found after parsing it.
  struct TerminatorPosition {
    size_t keyword;
    std::vector<size_t> values;
  };

  // Nodes up to the terminator (`return` for graphs, `yield` for bodies) and the closing '}'.
  TerminatorPosition block(Graph& graph, Scope& scope, std::string_view terminator) {
    std::string_view other = terminator == "return" ? "yield" : "return";
    TerminatorPosition where;
    for (;;) {
      skipTrivia();
      where.keyword = pos_;
      if (acceptKeyword(terminator)) break;
      bool startsNode = peek() == '%' || peek() == '"' || (!atEnd() && isWordStart(text_[pos_]));
      if (!startsNode || acceptKeyword(other)) {
        pos_ = where.keyword;
        expected("a node or '" + std::string(terminator) + "'");
      }
      node(graph, scope);
    }
    std::vector<Value*> outs;
    if (peek() == '%') {
      do {
        where.values.push_back(here());
        outs.push_back(valueUse(scope));
      } while (accept(','));
    }
    graph.setOutputs(std::move(outs));
    expect('}', "after '" + std::string(terminator) + "'");
    return where;
  }

  void node(Graph& graph, Scope& scope) {
    std::vector<Definition> results;
    if (peek() == '%') {
      do {
        Definition d = valueDefinition(scope);
        for (const auto& other : results)
          if (other.name == d.name) fail(d.offset, "value %" + d.name + " is defined twice");
        results.push_back(d);
      } while (accept(','));
      expect('=', "after the result names");
    }
    skipTrivia();
    std::string op = peek() == '"' ? string() : word();
    if (op.empty()) expected("an op name");
    expect('(', "after op name '" + op + "'");
    std::vector<Value*> args = operands(scope);
    AttrMap attrs = accept('{') ? attributes() : AttrMap{};
    expect(':', "before result types");
    size_t typesAt = here();
    std::vector<Type> types = peek() == '(' ? typeList("") : std::vector<Type>{type()};
    if (types.size() != results.size())
      fail(typesAt, op + " defines " + std::to_string(results.size()) + " results but lists " +
                        std::to_string(types.size()) + " result types");
    SourceLoc loc;
    if (acceptKeyword("loc")) {
      expect('(', "after 'loc'");
      loc.file = string();
      expect(':', "between the file and the line of a location");
      loc.line = smallInteger("a line number");
      if (peek() == '"') loc.module_path = string();
      expect(')', "to close the location");
    }
    Node* n =
        graph.createNode(op, std::move(args), std::move(types), std::move(attrs), std::move(loc));
    if (accept('{')) n->setBody(body());
    for (size_t i = 0; i < results.size(); ++i) {
      n->result(i)->setName(results[i].name);
      scope[results[i].name] = n->result(i);
    }
  }

  std::unique_ptr<Graph> body() {
    if (++depth_ > kMaxNesting) fail(pos_ - 1, "fused bodies nested too deeply");
    auto body = std::make_unique<Graph>();
    Scope scope;
    expect('^', "to start a fused body");
    inputs(*body, scope, "after '^'");
    expect(':', "after the body inputs");
    block(*body, scope, "yield");
    --depth_;
    return body;
  }

  std::string_view text_;
  std::string file_;
  std::vector<size_t> lineStarts_;
  size_t pos_ = 0;
  int depth_ = 0; // fused bodies being parsed
};

} // namespace

std::vector<std::unique_ptr<Graph>> parseModule(std::string_view text,
                                                const std::string& fileName) {
  return Parser(text, fileName).module();
}

std::unique_ptr<Graph> parseGraph(std::string_view text, const std::string& fileName) {
  auto graphs = parseModule(text, fileName);
  if (graphs.size() != 1)
    throw Error("parse", "expected exactly one graph, found " + std::to_string(graphs.size()),
                ErrorContext{.file = fileName});
  return std::move(graphs.front());
}

std::vector<std::unique_ptr<Graph>> parseFile(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error("parse", "cannot read file: it is a directory", ErrorContext{.file = path});
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error("parse", std::string("cannot read file: ") + std::strerror(errno),
                ErrorContext{.file = path});
  std::ostringstream contents;
  contents << in.rdbuf();
  return parseModule(contents.str(), path);
}

} // namespace loupe
