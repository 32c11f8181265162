// Micro-benchmark of generated CPU kernels: pointwise chains, broadcasting, a layer-norm-like
// reduction with epilogue and a softmax split into its four kernels, each run through an
// Executable on shapes from small to large. Prints microseconds per call and the bandwidth the
// graph's inputs and outputs imply (every tensor read or written once).
//
// Build and run (see docs/cpu-codegen.md):
//   cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release && ninja -C build-release
//   kernels_bench OMP_NUM_THREADS=1 build-release/bench/kernels_bench
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <random>

#include "compiler/codegen/cpu/cpu_codegen.h"
#include "compiler/ops/graph_builder.h"
#include "compiler/runtime/executable.h"

using namespace loupe;

namespace {

TensorType f32(Shape shape) {
  TensorType t;
  t.dtype = DType::F32;
  t.shape = std::move(shape);
  return t;
}

AttrMap attrs(std::initializer_list<std::pair<std::string, Attribute>> entries) {
  AttrMap map;
  for (const auto& [name, value] : entries)
    map.set(name, value);
  return map;
}

// Builds one fused group of `kind` from `body` (given the group's inputs, returns its outputs)
// at the end of `graph`, and names its kernel in `plan`.
std::vector<Value*>
fused(Graph& graph, Plan& plan, const std::string& kind, const std::vector<Value*>& operands,
      const std::function<std::vector<Value*>(GraphBuilder&, std::vector<Value*>)>& body) {
  auto inner = std::make_unique<Graph>("body");
  std::vector<Value*> innerInputs;
  for (Value* operand : operands)
    innerInputs.push_back(inner->addInput(operand->type(), operand->name() + "_b"));
  GraphBuilder builder(*inner, nullptr);
  inner->setOutputs(body(builder, innerInputs));
  std::vector<Type> results;
  for (const Value* output : inner->outputs())
    results.push_back(output->type());
  std::string name = "k" + std::to_string(plan.kernels.size());
  Node* node =
      graph.createNode("loupe.fused", operands, results, attrs({{"kind", kind}, {"kernel", name}}));
  node->setBody(std::move(inner));
  for (size_t r = 0; r < node->numResults(); ++r)
    node->result(r)->setName(name + "_" + std::to_string(r));
  plan.kernels.push_back({.name = name, .op = node->op(), .kind = KernelKind::Generated});
  return node->results();
}

using Shape64 = std::vector<int64_t>;

struct Case {
  std::string name;
  // Builds the graph for an input of shape `shape`; returns the shapes of its inputs.
  std::function<std::vector<Shape64>(Graph&, Plan&, const Shape64&)> build;
};

Shape toShape(const Shape64& shape) {
  return {shape.begin(), shape.end()};
}

Shape64 lastDimOnly(const Shape64& shape) {
  return {shape.back()};
}

const std::vector<Case> kCases = {
    {"pointwise chain x*y+1 -> relu -> exp",
     [](Graph& g, Plan& plan, const Shape64& shape) {
       Value* x = g.addInput(f32(toShape(shape)), "x");
       Value* y = g.addInput(f32(toShape(shape)), "y");
       g.setOutputs(fused(g, plan, "pointwise", {x, y}, [](GraphBuilder& b, auto in) {
         Value* t = b.op("aten.add.Scalar", {b.op("aten.mul.Tensor", {in[0], in[1]})},
                         attrs({{"other", 1.0}}));
         return std::vector<Value*>{b.op("aten.exp", {b.op("aten.relu", {t})})};
       }));
       return std::vector<Shape64>{shape, shape};
     }},
    {"broadcast x*w+b (w,b over last dim)",
     [](Graph& g, Plan& plan, const Shape64& shape) {
       Value* x = g.addInput(f32(toShape(shape)), "x");
       Value* w = g.addInput(f32(toShape(lastDimOnly(shape))), "w");
       Value* bias = g.addInput(f32(toShape(lastDimOnly(shape))), "bias");
       g.setOutputs(fused(g, plan, "pointwise", {x, w, bias}, [](GraphBuilder& b, auto in) {
         return std::vector<Value*>{
             b.op("aten.add.Tensor", {b.op("aten.mul.Tensor", {in[0], in[1]}), in[2]})};
       }));
       return std::vector<Shape64>{shape, lastDimOnly(shape), lastDimOnly(shape)};
     }},
    {"rms-norm: rsqrt(mean(x*x)+eps) then x*r*w",
     [](Graph& g, Plan& plan, const Shape64& shape) {
       Value* x = g.addInput(f32(toShape(shape)), "x");
       Value* w = g.addInput(f32(toShape(lastDimOnly(shape))), "w");
       Value* r = fused(g, plan, "reduction", {x}, [](GraphBuilder& b, auto in) {
         Value* mean = b.op("aten.mean.dim", {b.op("aten.mul.Tensor", {in[0], in[0]})},
                            attrs({{"dim", IntList{SymExpr(-1)}}, {"keepdim", true}}));
         return std::vector<Value*>{
             b.op("aten.rsqrt", {b.op("aten.add.Scalar", {mean}, attrs({{"other", 1e-5}}))})};
       })[0];
       g.setOutputs(fused(g, plan, "pointwise", {x, r, w}, [](GraphBuilder& b, auto in) {
         return std::vector<Value*>{
             b.op("aten.mul.Tensor", {b.op("aten.mul.Tensor", {in[0], in[1]}), in[2]})};
       }));
       return std::vector<Shape64>{shape, lastDimOnly(shape)};
     }},
    {"softmax over last dim (4 kernels)",
     [](Graph& g, Plan& plan, const Shape64& shape) {
       Value* x = g.addInput(f32(toShape(shape)), "x");
       AttrMap lastDim = attrs({{"dim", IntList{SymExpr(-1)}}, {"keepdim", true}});
       Value* m = fused(g, plan, "reduction", {x}, [&](GraphBuilder& b, auto in) {
         return std::vector<Value*>{b.op("aten.amax", {in[0]}, lastDim)};
       })[0];
       Value* e = fused(g, plan, "pointwise", {x, m}, [](GraphBuilder& b, auto in) {
         return std::vector<Value*>{b.op("aten.exp", {b.op("aten.sub.Tensor", {in[0], in[1]})})};
       })[0];
       Value* s = fused(g, plan, "reduction", {e}, [&](GraphBuilder& b, auto in) {
         return std::vector<Value*>{b.op("aten.sum.dim_IntList", {in[0]}, lastDim)};
       })[0];
       g.setOutputs(fused(g, plan, "pointwise", {e, s}, [](GraphBuilder& b, auto in) {
         return std::vector<Value*>{b.op("aten.div.Tensor", {in[0], in[1]})};
       }));
       return std::vector<Shape64>{shape};
     }},
    {"column sum over dim 0",
     [](Graph& g, Plan& plan, const Shape64& shape) {
       Value* x = g.addInput(f32(toShape(shape)), "x");
       g.setOutputs(fused(g, plan, "reduction", {x}, [](GraphBuilder& b, auto in) {
         return std::vector<Value*>{
             b.op("aten.sum.dim_IntList", {in[0]}, attrs({{"dim", IntList{SymExpr(0)}}}))};
       }));
       return std::vector<Shape64>{shape};
     }},
};

Tensor randomTensor(const Shape64& shape, unsigned seed) {
  std::mt19937 generator(seed);
  Tensor t = Tensor::empty(DType::F32, shape);
  std::uniform_real_distribution<float> uniform(-2, 2);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.dataAs<float>()[i] = uniform(generator);
  return t;
}

} // namespace

int main() {
  const std::vector<Shape64> shapes = {{64, 256}, {512, 1024}, {8, 128, 768}};
  std::printf("%-42s %-14s %12s %10s\n", "case", "shape", "us/call", "GB/s");
  for (const Case& c : kCases)
    for (const Shape64& shape : shapes) {
      Graph graph("bench");
      Plan plan;
      std::vector<Tensor> inputs;
      for (const Shape64& input : c.build(graph, plan, shape))
        inputs.push_back(randomTensor(input, static_cast<unsigned>(inputs.size())));
      Executable executable(graph, plan);
      int64_t bytes = 0;
      for (const Tensor& t : inputs)
        bytes += t.numel() * 4;
      for (const Tensor& t : executable.run(inputs))
        bytes += t.numel() * 4;
      // Repeat for about 0.3 s; report the best of five batches.
      auto time = [&](int calls) {
        auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < calls; ++i)
          executable.run(inputs);
        return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
                   .count() /
               calls;
      };
      int calls = std::max(1, static_cast<int>(60000 / std::max(1.0, time(3))));
      double best = 1e30;
      for (int batch = 0; batch < 5; ++batch)
        best = std::min(best, time(calls));
      std::string shapeText;
      for (int64_t d : shape)
        shapeText += (shapeText.empty() ? "" : "x") + std::to_string(d);
      std::printf("%-42s %-14s %12.1f %10.2f\n", c.name.c_str(), shapeText.c_str(), best,
                  static_cast<double>(bytes) / best / 1e3);
    }
}
