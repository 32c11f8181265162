// What an executable works out once per binding (view geometry, index operands) follows the
// binding when it changes between runs and when it comes back; view geometry also follows an
// input that arrives with other strides or another offset.
#include <gtest/gtest.h>

#include <set>

#include "compiler/runtime/executable.h"
#include "unit_tests/compiler/codegen/codegen_test_support.h"

namespace loupe::testing {
namespace {

AttrMap attrsOf(std::initializer_list<std::pair<std::string, Attribute>> values) {
  AttrMap attrs;
  for (const auto& [name, value] : values)
    attrs.set(name, value);
  return attrs;
}

// permute(x), and permute(relu(x)[1:s0]): a view of an input and views of an arena buffer,
// one with a symbolic bound.
struct Views {
  Graph graph{"views"};

  Views() {
    SymExpr s0 = SymExpr::symbol("s0");
    Value* x = graph.addInput(tensorType(DType::F32, {s0, 6}), "x");
    GraphBuilder builder(graph, nullptr);
    IntList swap{1, 0};
    Value* transposed = builder.op("aten.permute", {x}, attrsOf({{"dims", swap}}));
    Value* tail = builder.op("aten.slice.Tensor", {builder.op("aten.relu", {x})},
                             attrsOf({{"dim", SymExpr(0)}, {"start", SymExpr(1)}, {"end", s0}}));
    Value* tailTransposed = builder.op("aten.permute", {tail}, attrsOf({{"dims", swap}}));
    transposed->setName("xt"); // the steps' stats are keyed by their descriptions
    tailTransposed->setName("tt");
    graph.setOutputs({transposed, tailTransposed});
  }

  void expectRunMatches(Executable& executable, const Tensor& x) {
    int64_t rows = x.size(0);
    std::vector<Tensor> out = executable.run({x});
    ASSERT_EQ(out[0].shape(), (std::vector<int64_t>{6, rows}));
    ASSERT_EQ(out[1].shape(), (std::vector<int64_t>{6, rows - 1}));
    std::vector<double> values = x.toDoubles(); // row-major [rows, 6]
    for (int64_t c = 0; c < 6; ++c)
      for (int64_t r = 0; r < rows; ++r) {
        double v = values[static_cast<size_t>(r * 6 + c)];
        EXPECT_EQ(out[0].at(c * rows + r), v) << "permute(x) at " << c << "," << r;
        if (r > 0) {
          EXPECT_EQ(out[1].at(c * (rows - 1) + r - 1), std::max(v, 0.0));
        }
      }
  }
};

TEST(Rebinding, ViewsFollowTheBindingAndTheBaseGeometry) {
  Views views;
  ExecutableOptions options;
  options.compiler.cacheDir = testCacheDir();
  Executable executable(views.graph, Plan{}, options);
  for (int64_t rows : {3, 5, 3})
    views.expectRunMatches(executable, randomTensor(DType::F32, {rows, 6}, 10 + rows));
  // The same binding, the input now a transposed [6,3]: the view of it must follow its strides.
  Tensor columnMajor = randomTensor(DType::F32, {6, 3}, 20).view({3, 6}, {1, 3}, 0);
  views.expectRunMatches(executable, columnMajor);
  // And an input with an offset into its storage.
  Tensor shifted = randomTensor(DType::F32, {4, 6}, 21).view({3, 6}, {6, 1}, 6);
  views.expectRunMatches(executable, shifted);
  std::multiset<std::string> implementations;
  for (const auto& [name, stats] : executable.stats().kernels)
    implementations.insert(stats.implementation);
  EXPECT_EQ(implementations.count("view:aten.permute"), 2u);
  EXPECT_EQ(implementations.count("view:aten.slice.Tensor"), 1u);
}

TEST(Rebinding, IndexOperandsFollowTheBinding) {
  Graph graph("scaled");
  SymExpr s0 = SymExpr::symbol("s0");
  Value* n = graph.addInput(Type::index(s0), "n");
  Value* x = graph.addInput(tensorType(DType::F32, {s0}), "x");
  Node* scaled = graph.createNode("mylib.scale_by", {x, n}, {tensorType(DType::F32, {s0})});
  graph.setOutputs({scaled->result()});
  ExecutableOptions options;
  options.compiler.cacheDir = testCacheDir();
  options.fallback = [](const Node&, const std::vector<const Tensor*>& inputs,
                        std::vector<Tensor>& outputs, const SymbolBindings& bindings) {
    // The run's symbol values come along, for a node whose attributes are symbolic.
    EXPECT_EQ(bindings.at("s0"), outputs[0].numel());
    for (int64_t i = 0; i < outputs[0].numel(); ++i)
      outputs[0].set(i, inputs[0]->at(i) * inputs[1]->at(0));
  };
  Executable executable(graph, Plan{}, options);
  for (int64_t size : {4, 6, 4}) {
    Tensor input = randomTensor(DType::F32, {size}, 30);
    std::vector<Tensor> out =
        executable.run({Tensor::fromDoubles({static_cast<double>(size)}, DType::I64, {}), input});
    for (int64_t i = 0; i < size; ++i)
      EXPECT_FLOAT_EQ(out[0].at(i), static_cast<float>(size) * input.at(i)) << "n = " << size;
  }
}

} // namespace
} // namespace loupe::testing
