// Graph exporters: Graphviz dot (fused groups as clusters) and JSON (the graph's structure as
// plain data for scripts). Both read a parsed Graph; both are pure functions of it.
#pragma once

#include <string>

#include "compiler/ir/graph.h"

namespace loupe {

std::string exportDot(const Graph& graph);
std::string exportJson(const Graph& graph);    // pretty-printed, stable key order
std::string dotQuote(const std::string& text); // a dot string literal with escapes

} // namespace loupe
