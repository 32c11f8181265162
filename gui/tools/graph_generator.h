// Generated snapshots of a transformer-like model for benchmarks and big-graph tests: a stack
// of layers (norm, attention, MLP, residual adds), every node with a source line and an
// nn.Module path (model.layers.3.attn.q), weights as graph inputs, and the same graph as a
// pipeline leaves it after several passes.
#pragma once

#include <string>
#include <vector>

#include "inspector/trace/trace_records.h"

namespace loupe::view {

// How far down the pipeline the snapshot is.
enum class GeneratedStage {
  Traced, // as captured: no fused groups, no kernels
  Fused,  // the norm's and the MLP's pointwise nodes in fused groups
  Kernels // fused, and every top-level node with a kernel attribute
};

// About `nodes` op nodes (whole layers, at least one), in .lir text.
std::string generateGraphLir(int nodes, GeneratedStage stage);

// The passes of one compile of that graph, each with its snapshot, ready for TraceWriter.
std::vector<PassRecord> generatedPasses(int nodes);

// A memory plan for the Kernels snapshot: one buffer per top-level result, packed by
// compiler/pass/memory_layout.h. `plan` gets the arena and peak.
std::vector<BufferRecord> generatedBuffers(int nodes, MemoryPlanRecord& plan);

} // namespace loupe::view
