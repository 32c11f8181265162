// Prints graphs in the .lir text format (docs/lir-format.md). print(parse(text)) reproduces
// the printed text exactly: the format is lossless for everything the IR holds.
#pragma once

#include <ostream>
#include <string>

#include "compiler/ir/graph.h"

namespace loupe {

struct PrintOptions {
  bool locations = true; // print loc(...) suffixes
};

void print(const Graph& graph, std::ostream& os, const PrintOptions& options = {});
std::string toText(const Graph& graph, const PrintOptions& options = {});

} // namespace loupe
