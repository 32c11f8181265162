// The graph the reduce tests shrink: a chain of 24 pointwise nodes over inputs with a symbolic
// batch dim, one multiplication by a constant one in the middle (the only rewrite the front of
// the pipeline makes, so a fault injected after decision 1 lands there), and two outputs.
// Inputs are positive and below one, so no value vanishes or overflows along the chain.
#pragma once

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "compiler/ir/parser.h"
#include "compiler/tensor/tensor.h"

namespace loupe::testing {

inline std::string reduceGraphText() {
  std::string text = "graph @chain(%x: f32[s0,8], %y: f32[s0,8]) -> (f32[s0,8], f32[s0]) {\n"
                     "  %one = loupe.constant() {data=[1.0], dtype=f32, shape=[]} : f32[]\n";
  std::string last = "x";
  for (int i = 0; i < 22; ++i) {
    std::string name = "v" + std::to_string(i);
    std::string op = i == 11      ? "aten.mul.Tensor(%" + last + ", %one)"
                     : i % 3 == 0 ? "aten.add.Tensor(%" + last + ", %y) {alpha=1}"
                     : i % 3 == 1 ? "aten.mul.Tensor(%" + last + ", %y)"
                                  : "aten.neg(%" + last + ")";
    text += "  %" + name + " = " + op + " : f32[s0,8]  loc(\"chain.py\":" + std::to_string(i + 1) +
            ")\n";
    last = name;
  }
  text += "  %total = aten.sum.dim_IntList(%" + last +
          ") {dim=[1], keepdim=false} : f32[s0]\n"
          "  return %" +
          last + ", %total\n}\n";
  return text;
}

inline std::unique_ptr<Graph> reduceGraph() {
  return parseGraph(reduceGraphText(), "reduce_test_graph.h");
}

inline std::vector<Tensor> reduceInputs(int64_t batch = 4) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> dist(0.1, 0.9);
  std::vector<Tensor> inputs;
  for (int i = 0; i < 2; ++i) {
    Tensor t = Tensor::empty(DType::F32, {batch, 8});
    for (int64_t k = 0; k < t.numel(); ++k)
      t.set(k, dist(rng));
    inputs.push_back(std::move(t));
  }
  return inputs;
}

} // namespace loupe::testing
