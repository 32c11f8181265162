#include "inspector/export/graph_export.h"

#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "compiler/ir/attribute.h"
#include "compiler/ir/printer.h"

namespace loupe {

std::string dotQuote(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

namespace {

// Values parsed from a trace are all named; a graph built in memory may have unnamed ones,
// which get "#N" ids here.
std::map<const Value*, std::string> printedNames(const Graph& graph) {
  std::map<const Value*, std::string> names;
  int next = 0;
  std::function<void(const Graph&)> assign = [&](const Graph& g) {
    auto name = [&](const Value* v) {
      names[v] = v->name().empty() ? "#" + std::to_string(next++) : v->name();
    };
    for (const auto& in : g.inputs())
      name(in.get());
    for (Node* n : g.nodes()) {
      for (Value* r : n->results())
        name(r);
      if (n->hasBody()) assign(*n->body());
    }
  };
  assign(graph);
  return names;
}

std::string resultTypes(const Node& node) {
  std::string s;
  for (size_t i = 0; i < node.numResults(); ++i)
    s += (i ? ", " : "") + node.result(i)->type().str();
  return s;
}

void dotGraph(const Graph& graph, const std::map<const Value*, std::string>& names,
              std::ostringstream& os, const std::string& indent, int& clusterCount) {
  auto id = [&](const Value* v) { return dotQuote("v:" + names.at(v)); };
  for (const auto& in : graph.inputs())
    os << indent << id(in.get())
       << " [shape=ellipse, label=" << dotQuote("%" + names.at(in.get()) + "\n" + in->type().str())
       << "];\n";
  for (Node* node : graph.nodes()) {
    std::string label = node->op() + "\n" + resultTypes(*node);
    if (!node->loc().file.empty())
      label += "\n" + node->loc().file + ":" + std::to_string(node->loc().line);
    if (node->hasBody()) {
      os << indent << "subgraph cluster_" << clusterCount++ << " {\n"
         << indent << "  label="
         << dotQuote(node->op() + " " + (node->numResults() ? "%" + names.at(node->result(0)) : ""))
         << ";\n"
         << indent << "  style=rounded; color=\"#4a7ab5\";\n";
      dotGraph(*node->body(), names, os, indent + "  ", clusterCount);
      os << indent << "}\n";
      // Connect the group's operands to the body inputs and the body outputs to its results.
      for (size_t i = 0; i < node->numOperands(); ++i)
        if (node->operand(i))
          os << indent << id(node->operand(i)) << " -> " << id(node->body()->input(i))
             << " [style=dashed];\n";
      for (size_t i = 0; i < node->numResults(); ++i) {
        os << indent << id(node->result(i)) << " [shape=point];\n";
        os << indent << id(node->body()->outputs()[i]) << " -> " << id(node->result(i))
           << " [style=dashed];\n";
      }
      continue;
    }
    // A node is drawn once, under its first result's id; further results alias to it.
    std::string nodeId =
        node->numResults() ? id(node->result(0)) : dotQuote("n:" + std::to_string(clusterCount++));
    os << indent << nodeId << " [shape=box, label=" << dotQuote(label) << "];\n";
    for (size_t i = 1; i < node->numResults(); ++i)
      os << indent << id(node->result(i)) << " [shape=point];\n"
         << indent << nodeId << " -> " << id(node->result(i)) << " [arrowhead=none];\n";
    for (Value* operand : node->operands())
      if (operand) os << indent << id(operand) << " -> " << nodeId << ";\n";
  }
}

nlohmann::ordered_json graphJson(const Graph& graph,
                                 const std::map<const Value*, std::string>& names) {
  nlohmann::ordered_json g;
  g["name"] = graph.name();
  g["inputs"] = nlohmann::ordered_json::array();
  for (const auto& in : graph.inputs())
    g["inputs"].push_back({{"name", names.at(in.get())}, {"type", in->type().str()}});
  g["nodes"] = nlohmann::ordered_json::array();
  for (Node* node : graph.nodes()) {
    nlohmann::ordered_json n;
    n["op"] = node->op();
    n["operands"] = nlohmann::ordered_json::array();
    for (Value* v : node->operands())
      n["operands"].push_back(v ? nlohmann::ordered_json(names.at(v)) : nullptr);
    n["results"] = nlohmann::ordered_json::array();
    for (Value* r : node->results())
      n["results"].push_back({{"name", names.at(r)}, {"type", r->type().str()}});
    n["attrs"] = nlohmann::ordered_json::object();
    for (const auto& [key, value] : node->attrs().values())
      n["attrs"][key] = attributeStr(value);
    if (node->loc().known())
      n["loc"] = {{"file", node->loc().file},
                  {"line", node->loc().line},
                  {"module", node->loc().module_path}};
    if (node->hasBody()) n["body"] = graphJson(*node->body(), names);
    g["nodes"].push_back(std::move(n));
  }
  g["outputs"] = nlohmann::ordered_json::array();
  for (Value* v : graph.outputs())
    g["outputs"].push_back(names.at(v));
  return g;
}

} // namespace

std::string exportDot(const Graph& graph) {
  auto names = printedNames(graph);
  std::ostringstream os;
  os << "digraph " << dotQuote(graph.name())
     << " {\n  rankdir=TB;\n  node [fontname=\"monospace\", fontsize=10];\n";
  int clusters = 0;
  dotGraph(graph, names, os, "  ", clusters);
  for (size_t i = 0; i < graph.outputs().size(); ++i)
    os << "  " << dotQuote("out:" + std::to_string(i))
       << " [shape=ellipse, label=" << dotQuote("output " + std::to_string(i)) << "];\n  "
       << dotQuote("v:" + names.at(graph.outputs()[i])) << " -> "
       << dotQuote("out:" + std::to_string(i)) << ";\n";
  os << "}\n";
  return os.str();
}

std::string exportJson(const Graph& graph) {
  return graphJson(graph, printedNames(graph)).dump(2) + "\n";
}

} // namespace loupe
