// The device a graph is compiled for. Kernel selection plans for it and the compile driver builds
// its runtime, so both read it here: the target named in PipelineOptions::target ("cpu", "cuda",
// "cuda:1"), or, when none is named, the device of the graph's tensors as the IR carries it
// (f32[8]<cuda:0>): a CUDA device when any input or result is on one. CPU tensors may feed a
// CUDA graph (a 0-d scalar, as torch allows); tensors on two CUDA devices are an error.
#pragma once

#include <optional>
#include <string>

#include "compiler/ir/graph.h"

namespace loupe {

// Throws Error("kernel-selection", ...) for an unknown target name or a graph on two devices.
Device targetDevice(const Graph& graph, const std::string& target);

// The same, or none where targetDevice throws: for the passes before kernel selection, which
// plan for the device but leave reporting a bad target to kernel selection.
std::optional<Device> validTargetDevice(const Graph& graph, const std::string& target);

} // namespace loupe
