// The graph the bisect tests compile: rewrites for the front half of the pipeline (a
// multiplication by one, a duplicate), pointwise and reduction fusions for the back half, and
// two outputs. Inputs are positive so that relu hides no perturbation.
#pragma once

#include <memory>
#include <random>
#include <vector>

#include "compiler/ir/parser.h"
#include "compiler/tensor/tensor.h"

namespace loupe::testing {

inline constexpr const char* kBisectGraph = R"lir(
graph @model(%x: f32[4,8], %y: f32[4,8]) -> (f32[4,8], f32[4]) {
  %one = loupe.constant() {data=[1.0], dtype=f32, shape=[]} : f32[]
  %0 = aten.mul.Tensor(%x, %one) : f32[4,8]                  loc("model.py":3 "enc")
  %1 = aten.add.Tensor(%0, %y) {alpha=1} : f32[4,8]          loc("model.py":4 "enc")
  %2 = aten.add.Tensor(%0, %y) {alpha=1} : f32[4,8]          loc("model.py":5 "enc")
  %3 = aten.mul.Tensor(%1, %2) : f32[4,8]                    loc("model.py":6 "enc.act")
  %4 = aten.relu(%3) : f32[4,8]                              loc("model.py":7 "enc.act")
  %5 = aten.neg(%4) : f32[4,8]                               loc("model.py":8 "head")
  %6 = aten.sum.dim_IntList(%5) {dim=[1], keepdim=false} : f32[4] loc("model.py":9 "head")
  return %4, %6
}
)lir";

inline std::unique_ptr<Graph> bisectGraph() {
  return parseGraph(kBisectGraph, "bisect_test_graph.h");
}

inline std::vector<Tensor> bisectInputs() {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> dist(0.1, 1.0); // positive: relu keeps everything
  std::vector<Tensor> inputs;
  for (int i = 0; i < 2; ++i) {
    Tensor t = Tensor::empty(DType::F32, {4, 8});
    for (int64_t k = 0; k < t.numel(); ++k)
      t.set(k, dist(rng));
    inputs.push_back(std::move(t));
  }
  return inputs;
}

} // namespace loupe::testing
