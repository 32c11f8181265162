// Records a .lir graph's compile in a trace, as `loupe bisect` and `loupe reduce` make it (the
// pipeline and its options, an injected fault included), so that what they found about the
// graph (a bisection, a reduction) has a compile to belong to.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/pass/pass.h"
#include "inspector/trace/trace_writer.h"

namespace loupe::cli {

// Begins a run named `command`, compiles a copy of `graph` into it, and returns the compile id.
int64_t recordGraphCompile(TraceWriter& writer, const std::string& command, const std::string& file,
                           const Graph& graph, const std::vector<std::string>& pipeline,
                           const PipelineOptions& pipelineOptions);

} // namespace loupe::cli
