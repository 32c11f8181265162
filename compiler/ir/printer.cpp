// The .lir printer. Every spelling here has a matching rule in parser.cpp; docs/lir-format.md
// is the grammar both follow.
#include "compiler/ir/printer.h"

#include <algorithm>
#include <cctype>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

namespace loupe {

namespace {

bool isNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
}

// Value and graph names: [A-Za-z0-9_][A-Za-z0-9_.]* prints bare, anything else quoted.
bool isBareName(const std::string& name) {
  return !name.empty() && name[0] != '.' && std::all_of(name.begin(), name.end(), isNameChar);
}

// Op and attribute names: [A-Za-z_][A-Za-z0-9_.]*. Ops named like the block terminators are
// quoted so that a statement starting with `return` or `yield` is always a terminator.
bool isBareWord(const std::string& word) {
  return isBareName(word) && !std::isdigit(static_cast<unsigned char>(word[0]));
}
bool isBareOpName(const std::string& op) {
  return isBareWord(op) && op != "return" && op != "yield";
}

std::string quoted(const std::string& text) {
  return attributeStr(Attribute{text});
}

class Printer {
public:
  Printer(std::ostream& os, const PrintOptions& options) : os_(os), options_(options) {}

  void printGraph(const Graph& graph) {
    Scope scope = nameValues(graph);
    os_ << "graph @" << (isBareName(graph.name()) ? graph.name() : quoted(graph.name())) << "(";
    printInputs(graph, scope);
    os_ << ") -> (";
    for (size_t i = 0; i < graph.outputs().size(); ++i) {
      const Value* out = graph.outputs()[i];
      os_ << (i ? ", " : "") << (out ? out->type().str() : "none");
    }
    os_ << ") {\n";
    printNodes(graph, scope, 2);
    printTerminator("return", graph, scope, 2);
    os_ << "}\n";
  }

private:
  // Value names of one graph scope: fused bodies are isolated, so each body numbers anew.
  using Scope = std::unordered_map<const Value*, std::string>;

  static Scope nameValues(const Graph& graph) {
    std::vector<const Value*> values;
    for (const auto& in : graph.inputs())
      values.push_back(in.get());
    for (const Node* node : graph.nodes())
      for (const Value* r : node->results())
        values.push_back(r);

    std::unordered_set<std::string> taken;
    for (const Value* v : values)
      taken.insert(v->name());
    Scope scope;
    size_t next = 0;
    for (const Value* v : values) {
      if (!v->name().empty()) {
        scope[v] = v->name();
        continue;
      }
      while (taken.count(std::to_string(next)))
        ++next;
      scope[v] = std::to_string(next++);
    }
    return scope;
  }

  // A value from another scope only appears in a broken graph (the verifier rejects it);
  // printing it anyway is what makes such a graph debuggable.
  static std::string valueRef(const Value* value, const Scope& scope) {
    if (!value) return "none";
    auto it = scope.find(value);
    const std::string& name = it != scope.end() ? it->second : value->name();
    return "%" + (isBareName(name) ? name : quoted(name));
  }

  void printInputs(const Graph& graph, const Scope& scope) {
    for (size_t i = 0; i < graph.numInputs(); ++i) {
      const Value* in = graph.input(i);
      os_ << (i ? ", " : "") << valueRef(in, scope) << ": " << in->type().str();
    }
  }

  void printNodes(const Graph& graph, const Scope& scope, size_t indent) {
    for (const Node* node : graph.nodes())
      printNode(*node, scope, indent);
  }

  void printTerminator(const char* keyword, const Graph& graph, const Scope& scope, size_t indent) {
    os_ << std::string(indent, ' ') << keyword;
    for (size_t i = 0; i < graph.outputs().size(); ++i)
      os_ << (i ? ", " : " ") << valueRef(graph.outputs()[i], scope);
    os_ << "\n";
  }

  void printNode(const Node& node, const Scope& scope, size_t indent) {
    os_ << std::string(indent, ' ');
    for (size_t i = 0; i < node.numResults(); ++i)
      os_ << (i ? ", " : "") << valueRef(node.result(i), scope);
    if (node.numResults()) os_ << " = ";
    os_ << (isBareOpName(node.op()) ? node.op() : quoted(node.op())) << "(";
    for (size_t i = 0; i < node.numOperands(); ++i)
      os_ << (i ? ", " : "") << valueRef(node.operand(i), scope);
    os_ << ")";
    printAttrs(node.attrs());
    os_ << " : ";
    if (node.numResults() == 1) {
      os_ << node.result()->type().str();
    } else {
      os_ << "(";
      for (size_t i = 0; i < node.numResults(); ++i)
        os_ << (i ? ", " : "") << node.result(i)->type().str();
      os_ << ")";
    }
    if (options_.locations && node.loc().known()) printLoc(node.loc());
    if (node.hasBody()) printBody(*node.body(), indent);
    os_ << "\n";
  }

  void printAttrs(const AttrMap& attrs) {
    if (attrs.empty()) return;
    os_ << " {";
    bool first = true;
    for (const auto& [name, value] : attrs.values()) {
      os_ << (first ? "" : ", ") << (isBareWord(name) ? name : quoted(name)) << "="
          << attributeStr(value);
      first = false;
    }
    os_ << "}";
  }

  void printLoc(const SourceLoc& loc) {
    os_ << "  loc(" << quoted(loc.file) << ":" << loc.line;
    if (!loc.module_path.empty()) os_ << " " << quoted(loc.module_path);
    os_ << ")";
  }

  void printBody(const Graph& body, size_t indent) {
    Scope scope = nameValues(body);
    os_ << " {\n" << std::string(indent + 2, ' ') << "^(";
    printInputs(body, scope);
    os_ << "):\n";
    printNodes(body, scope, indent + 4);
    printTerminator("yield", body, scope, indent + 4);
    os_ << std::string(indent, ' ') << "}";
  }

  std::ostream& os_;
  const PrintOptions& options_;
};

} // namespace

void print(const Graph& graph, std::ostream& os, const PrintOptions& options) {
  Printer(os, options).printGraph(graph);
}

std::string toText(const Graph& graph, const PrintOptions& options) {
  std::ostringstream os;
  print(graph, os, options);
  return os.str();
}

} // namespace loupe
