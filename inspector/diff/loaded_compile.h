// One compile's pipeline read from its trace for the differ: every pass's row with the graph
// its snapshot holds, parsed as untrusted text (a snapshot that does not parse is an
// Error("diff") naming the trace, the compile and the pass). The detectors read the compile's
// other records (guards, kernels, memory plan, ...) through `ref.trace` as they need them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "inspector/diff/compile_diff.h"

namespace loupe::diff {

struct LoadedPass {
  PassRow row;
  std::unique_ptr<Graph> graph; // null when the pass failed before leaving a graph
};

struct LoadedCompile {
  CompileRef ref;
  CompileRow row;
  std::vector<LoadedPass> passes;
};

LoadedCompile loadCompile(const CompileRef& ref);

// The names DimAbstraction gives the inputs: the compile's own names when it has one for
// every tensor input of `graph`, else none (its defaults).
std::vector<std::string> inputNames(const LoadedCompile& compile, const Graph& graph);

} // namespace loupe::diff
