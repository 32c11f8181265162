// Inputs for running a .lir graph from the command line: .npy files, named (x=a.npy) or in
// order, and random tensors for the rest, their symbolic dims bound by the given inputs or
// by --symbol s0=8. Mistakes are Error("usage", ...).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/tensor/tensor.h"

namespace loupe::cli {

std::vector<Tensor> prepareInputs(const Graph& graph, const std::vector<std::string>& inputs,
                                  const std::vector<std::string>& symbols, uint64_t seed);

} // namespace loupe::cli
