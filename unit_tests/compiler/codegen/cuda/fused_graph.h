// Test graphs as the compiler would hand them to the CUDA generator: parsed from .lir text and
// run through the default pipeline (decomposition, fusion, ...), or only the named passes.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/parser.h"
#include "passes/pipeline.h"

namespace loupe::testing {

inline std::unique_ptr<Graph>
fusedGraph(const std::string& text, const std::vector<std::string>& passes = defaultPipeline()) {
  auto graph = parseGraph(text);
  PipelineOptions options;
  PassInstrumentation silent;
  Plan plan;
  PassContext context(options, silent, plan);
  PassManager manager;
  addPasses(manager, passes);
  manager.run(*graph, context);
  return graph;
}

} // namespace loupe::testing
