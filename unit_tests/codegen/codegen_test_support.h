// Helpers for the code generation tests: graphs with a fused group or single op built by hand,
// random inputs, and a runner that executes a graph once through generated kernels and once
// through reference implementations so the two can be compared.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ops/graph_builder.h"
#include "compiler/runtime/executable.h"

namespace loupe::testing {

// A kernel cache private to this test process, removed at exit.
const std::string& testCacheDir();

TensorType tensorType(DType dtype, Shape shape);

// Uniform values in [-2, 2] (floats), [-5, 5] (ints) or {0, 1} (bool), from a fixed seed.
Tensor randomTensor(DType dtype, const std::vector<int64_t>& shape, unsigned seed);

// Turns `body` (a standalone graph) into a loupe.fused node at the end of `outer`, whose
// operands are `operands` (one per body input) and whose results mirror the body outputs.
Node* addFused(Graph& outer, std::unique_ptr<Graph> body, const std::vector<Value*>& operands,
               const std::string& kind);

// A plan asking for a generated kernel for every top-level node that supports one (and
// naming each node's kernel "k<position>"). Every fused node must support one.
Plan generatedPlan(Graph& graph);

// Runs `graph` on `inputs` twice, with generated kernels and with the empty plan (reference
// implementations), and expects every output to agree within `tolerance` (absolute, plus the
// same relative to the expected value).
void expectGeneratedMatchesReference(Graph& graph, const std::vector<Tensor>& inputs,
                                     double tolerance = 1e-5);

double maxAbsDifference(const Tensor& a, const Tensor& b);

} // namespace loupe::testing
