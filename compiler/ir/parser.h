// Parses the .lir text format (docs/lir-format.md). Errors are Error("parse") carrying
// file:line:column and what was expected. Parsing only builds the graph; run verify() after.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/graph.h"

namespace loupe {

// A .lir file holds one or more graphs.
std::vector<std::unique_ptr<Graph>> parseModule(std::string_view text,
                                                const std::string& fileName = "<input>");
std::unique_ptr<Graph> parseGraph(std::string_view text,
                                  const std::string& fileName = "<input>"); // exactly one
std::vector<std::unique_ptr<Graph>>
parseFile(const std::string& path); // Error naming the path when unreadable

} // namespace loupe
