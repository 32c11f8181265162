// The executable end to end on small hand-built graphs: library, generated, view, reference and
// fallback steps; symbol binding; outputs that alias inputs, views or each other; check mode.
#include "compiler/ir/parser.h"
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/codegen/cpu/cpu_isa.h"
#include "compiler/ir/error.h"
#include "unit_tests/compiler/codegen/codegen_test_support.h"

namespace loupe::testing {
namespace {

ExecutableOptions testOptions() {
  ExecutableOptions options;
  options.compiler.cacheDir = testCacheDir();
  return options;
}

AttrMap intListAttr(const std::string& name, std::vector<int64_t> values) {
  AttrMap attrs;
  attrs.set(name, IntList(values.begin(), values.end()));
  return attrs;
}

void choose(Plan& plan, Node* node, const std::string& name, KernelKind kind) {
  node->attrs().set("kernel", name);
  plan.kernels.push_back({.name = name, .op = node->op(), .kind = kind});
}

// relu(x @ permute(w) + b) with a symbolic batch: mm from BLAS on a transposed view, the bias
// and relu as one generated kernel.
struct LinearRelu {
  Graph graph{"linear_relu"};
  Plan plan;

  LinearRelu() {
    SymExpr s0 = SymExpr::symbol("s0");
    Value* x = graph.addInput(tensorType(DType::F32, {s0, 4}), "x");
    Value* w = graph.addInput(tensorType(DType::F32, {3, 4}), "w");
    Value* b = graph.addInput(tensorType(DType::F32, {3}), "b");
    GraphBuilder builder(graph, nullptr);
    Value* product =
        builder.op("aten.mm", {x, builder.op("aten.permute", {w}, intListAttr("dims", {1, 0}))});
    choose(plan, product->definingNode(), "k0", KernelKind::Library);

    auto body = std::make_unique<Graph>("body");
    Value* p = body->addInput(product->type(), "p");
    Value* bias = body->addInput(b->type(), "bias");
    GraphBuilder inner(*body, nullptr);
    body->setOutputs({inner.op("aten.relu", {inner.op("aten.add.Tensor", {p, bias})})});
    Node* fused = addFused(graph, std::move(body), {product, b}, "pointwise");
    choose(plan, fused, "k1", KernelKind::Generated);
    graph.setOutputs({fused->result()});
  }

  static std::vector<double> expected(const Tensor& x, const Tensor& w, const Tensor& b) {
    std::vector<double> out;
    for (int64_t i = 0; i < x.size(0); ++i)
      for (int64_t j = 0; j < 3; ++j) {
        double sum = b.at(j);
        for (int64_t k = 0; k < 4; ++k)
          sum += x.at(i * 4 + k) * w.at(j * 4 + k);
        out.push_back(std::max(sum, 0.0));
      }
    return out;
  }
};

TEST(Executable, LinearReluWithLibraryAndGeneratedKernels) {
  LinearRelu model;
  Executable executable(model.graph, model.plan, testOptions());
  for (int64_t rows : {2, 5}) {
    Tensor x = randomTensor(DType::F32, {rows, 4}, 1), w = randomTensor(DType::F32, {3, 4}, 2),
           b = randomTensor(DType::F32, {3}, 3);
    std::vector<Tensor> out = executable.run({x, w, b});
    ASSERT_EQ(out.size(), 1u);
    ASSERT_EQ(out[0].shape(), (std::vector<int64_t>{rows, 3}));
    std::vector<double> expected = LinearRelu::expected(x, w, b);
    for (int64_t i = 0; i < out[0].numel(); ++i)
      EXPECT_NEAR(out[0].at(i), expected[i], 1e-5);
  }
  EXPECT_EQ(executable.stats().kernels.at("k0").implementation, "library:aten.mm");
  EXPECT_EQ(executable.stats().kernels.at("k1").implementation, "generated:loupe.fused");
  EXPECT_EQ(executable.stats().kernels.at("k1").calls, 2);
  // The threads each kernel could use (torch.set_num_threads when embedded).
  for (const char* kernel : {"k0", "k1"})
    EXPECT_TRUE(executable.stats().kernels.at(kernel).launch.ends_with("thread") ||
                executable.stats().kernels.at(kernel).launch.ends_with("threads"))
        << executable.stats().kernels.at(kernel).launch;
}

// Kernels built in the background, into a cache folder of the test's own (so they are built).
ExecutableOptions backgroundBuild(const std::string& cacheFolder) {
  ExecutableOptions options = testOptions();
  options.buildKernelsInBackground = true;
  options.compiler.cacheDir = testCacheDir() + "/" + cacheFolder;
  return options;
}

TEST(Executable, ABackgroundBuildIsWaitedForByTheFirstRun) {
  LinearRelu model;
  Executable executable(model.graph, model.plan, backgroundBuild("background"));
  Tensor x = randomTensor(DType::F32, {2, 4}, 1), w = randomTensor(DType::F32, {3, 4}, 2),
         b = randomTensor(DType::F32, {3}, 3);
  std::vector<Tensor> out = executable.run({x, w, b});
  std::vector<double> expected = LinearRelu::expected(x, w, b);
  for (int64_t i = 0; i < out[0].numel(); ++i)
    EXPECT_NEAR(out[0].at(i), expected[i], 1e-5);
  EXPECT_EQ(executable.stats().kernels.at("k1").implementation, "generated:loupe.fused");
  EXPECT_GT(executable.kernelBuildMs(), 0);
  executable.waitForKernels(); // built: returns at once
}

TEST(Executable, KernelBuildsSayWhetherEachGeneratedKernelCameFromTheCache) {
  LinearRelu model;
  ExecutableOptions options = backgroundBuild("kernel-builds");
  Executable first(model.graph, model.plan, options);
  first.waitForKernels();
  ASSERT_EQ(first.kernelBuilds().size(), 1u); // k0 is a library kernel
  EXPECT_FALSE(first.kernelBuilds().at("k1").fromCache);
  EXPECT_GT(first.kernelBuilds().at("k1").buildMs, 0);
  EXPECT_EQ(first.kernelBuilds().at("k1").resources, configuredCpuIsa().name);
  Executable second(model.graph, model.plan, options);
  second.waitForKernels();
  EXPECT_TRUE(second.kernelBuilds().at("k1").fromCache);
}

TEST(Executable, AFailedBackgroundBuildIsReportedByEveryWaitAndRun) {
  LinearRelu model;
  ExecutableOptions options = backgroundBuild("failed-build");
  options.compiler.compiler = "/nonexistent/c++";
  Executable executable(model.graph, model.plan, options); // the build fails, later
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      executable.waitForKernels();
      FAIL() << "expected an error";
    } catch (const Error& error) {
      EXPECT_EQ(error.kind(), "codegen");
      EXPECT_NE(error.message().find("/nonexistent/c++"), std::string::npos) << error.message();
    }
  }
  Tensor x = randomTensor(DType::F32, {2, 4}, 1), w = randomTensor(DType::F32, {3, 4}, 2),
         b = randomTensor(DType::F32, {3}, 3);
  EXPECT_THROW(executable.run({x, w, b}), Error);
}

TEST(Executable, AnEmptyPlanRunsEverythingThroughReferences) {
  LinearRelu model;
  Executable executable(model.graph, Plan{}, testOptions());
  Tensor x = randomTensor(DType::F32, {3, 4}, 4), w = randomTensor(DType::F32, {3, 4}, 5),
         b = randomTensor(DType::F32, {3}, 6);
  std::vector<Tensor> out = executable.run({x, w, b});
  std::vector<double> expected = LinearRelu::expected(x, w, b);
  for (int64_t i = 0; i < out[0].numel(); ++i)
    EXPECT_NEAR(out[0].at(i), expected[i], 1e-5);
  for (const auto& [name, stats] : executable.stats().kernels)
    EXPECT_EQ(stats.implementation.rfind("generated", 0), std::string::npos) << name;
}

// torch hands over empty tensors with a null data pointer (a lifted `torch.tensor([])`): they
// are defined tensors all the same, and ops on them run.
TEST(Executable, EmptyBorrowedTensorsWithANullDataPointerRun) {
  auto graph = parseGraph(R"(graph @g(%x: f32[0]) -> (f32[0]) {
  %y = aten.lift_fresh_copy(%x) : f32[0]
  return %y
})");
  Executable executable(*graph, Plan{}, testOptions());
  std::vector<Tensor> out = executable.run({Tensor::borrow(nullptr, DType::F32, {0})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].defined());
  EXPECT_EQ(out[0].numel(), 0);
  EXPECT_THROW(Tensor::borrow(nullptr, DType::F32, {2}), Error);
}

TEST(Executable, NamesTheInputAndDimThatContradictTheBinding) {
  LinearRelu model;
  Executable executable(model.graph, Plan{}, testOptions());
  try {
    executable.run({randomTensor(DType::F32, {2, 5}, 1), randomTensor(DType::F32, {3, 4}, 2),
                    randomTensor(DType::F32, {3}, 3)});
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(error.message().find("dim 1 of input %x is 5"), std::string::npos) << error.what();
  }
  EXPECT_THROW(executable.run({randomTensor(DType::F32, {2, 4}, 1)}), Error);
}

TEST(Executable, IndexInputsBindTheirSymbol) {
  Graph graph("index");
  SymExpr s0 = SymExpr::symbol("s0");
  graph.addInput(Type::index(s0), "n");
  Value* x = graph.addInput(tensorType(DType::F32, {s0}), "x");
  graph.setOutputs({GraphBuilder(graph, nullptr).op("aten.neg", {x})});
  Executable executable(graph, Plan{}, testOptions());
  Tensor n = Tensor::fromDoubles({4}, DType::I64, {});
  EXPECT_EQ(executable.run({n, randomTensor(DType::F32, {4}, 1)})[0].shape(),
            (std::vector<int64_t>{4}));
  try {
    executable.run({n, randomTensor(DType::F32, {3}, 1)});
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(error.message().find("dim 0 of input %x is 3 but the graph expects s0 = 4"),
              std::string::npos)
        << error.what();
  }
}

TEST(Executable, BatchedMatmulOnTransposedAndSlicedViews) {
  Graph graph("bmm");
  Value* a = graph.addInput(tensorType(DType::F64, {2, 3, 4}), "a");
  Value* b = graph.addInput(tensorType(DType::F64, {2, 5, 4}), "b");
  GraphBuilder builder(graph, nullptr);
  Value* product =
      builder.op("aten.bmm", {a, builder.op("aten.permute", {b}, intListAttr("dims", {0, 2, 1}))});
  graph.setOutputs({product});
  Plan plan;
  choose(plan, product->definingNode(), "bmm", KernelKind::Library);
  ExecutableOptions options = testOptions();
  options.check = true;
  Executable executable(graph, plan, options);
  Tensor wide = randomTensor(DType::F64, {2, 3, 9}, 1);
  Tensor everyOtherColumn = wide.view({2, 3, 4}, {27, 9, 2}, 1); // fits no BLAS layout: packed
  executable.run({everyOtherColumn, randomTensor(DType::F64, {2, 5, 4}, 2)});
  const KernelStats& stats = executable.stats().kernels.at("bmm");
  EXPECT_EQ(stats.implementation, "library:aten.bmm");
  EXPECT_LT(stats.maxAbsError, 1e-12);
}

TEST(Executable, OutputsThatAreInputsOrViewsOfThemAreCopies) {
  Graph graph("aliases");
  Value* x = graph.addInput(tensorType(DType::F32, {2, 3}), "x");
  GraphBuilder builder(graph, nullptr);
  Value* transposed = builder.op("aten.permute", {x}, intListAttr("dims", {1, 0}));
  Value* relu = builder.op("aten.relu", {transposed}); // reads the strided view
  Value* back = builder.op("aten.permute", {relu}, intListAttr("dims", {1, 0}));
  graph.setOutputs({x, transposed, back});
  Plan plan;
  choose(plan, relu->definingNode(), "k0", KernelKind::Generated);
  Executable executable(graph, plan, testOptions());

  Tensor input = randomTensor(DType::F32, {2, 3}, 7);
  std::vector<double> original = input.toDoubles();
  std::vector<Tensor> out = executable.run({input});
  for (int64_t i = 0; i < 6; ++i)
    input.set(i, 100.0); // the outputs must not see this
  ASSERT_EQ(out[1].shape(), (std::vector<int64_t>{3, 2}));
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t c = 0; c < 3; ++c) {
      double v = original[static_cast<size_t>(r * 3 + c)];
      EXPECT_EQ(out[0].at(r * 3 + c), v);
      EXPECT_EQ(out[1].at(c * 2 + r), v);
      EXPECT_EQ(out[2].at(r * 3 + c), std::max(v, 0.0));
    }
}

// aot_autograd's forwards return activations and views of them for the backward: a view comes
// back as a view (no copy) of memory the next run does not overwrite, and no two outputs share
// memory.
TEST(Executable, ViewsOfComputedValuesAreReturnedWithoutACopyAndOutliveTheNextRun) {
  Graph graph("saved_views");
  Value* x = graph.addInput(tensorType(DType::F32, {2, 3}), "x");
  GraphBuilder builder(graph, nullptr);
  Value* relu = builder.op("aten.relu", {x});
  Value* transposed = builder.op("aten.permute", {relu}, intListAttr("dims", {1, 0}));
  Value* negated = builder.op("aten.neg", {x}); // an intermediate only its view shows
  Value* negatedT = builder.op("aten.permute", {negated}, intListAttr("dims", {1, 0}));
  graph.setOutputs({transposed, negatedT, relu});
  Executable executable(graph, Plan{}, testOptions());

  Tensor first = randomTensor(DType::F32, {2, 3}, 11);
  std::vector<Tensor> out = executable.run({first});
  EXPECT_EQ(out[0].strides(), (std::vector<int64_t>{1, 3})); // a copy would be packed
  EXPECT_EQ(out[1].strides(), (std::vector<int64_t>{1, 3}));
  EXPECT_NE(out[2].data(), out[0].data()); // relu's memory went to its view: relu is a copy
  executable.run({randomTensor(DType::F32, {2, 3}, 12)});
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t c = 0; c < 3; ++c) {
      double v = first.at(r * 3 + c);
      EXPECT_EQ(out[0].at(c * 2 + r), std::max(v, 0.0));
      EXPECT_EQ(out[1].at(c * 2 + r), -v);
      EXPECT_EQ(out[2].at(r * 3 + c), std::max(v, 0.0));
    }
}

TEST(Executable, InputsReturnedAsTheyAreWhenTheEmbedderAsks) {
  Graph graph("saved_inputs");
  Value* x = graph.addInput(tensorType(DType::F32, {4}), "x");
  Value* w = graph.addInput(tensorType(DType::F32, {4}), "w");
  graph.setOutputs({GraphBuilder(graph, nullptr).op("aten.mul.Tensor", {x, w}), w, x});
  ExecutableOptions options = testOptions();
  options.inputOutputsAsIs = true;
  Executable executable(graph, Plan{}, options);
  EXPECT_EQ(executable.outputInputs(), (std::vector<int>{-1, 1, 0}));

  Tensor xs = randomTensor(DType::F32, {4}, 13), ws = randomTensor(DType::F32, {4}, 14);
  std::vector<Tensor> out = executable.run({xs, ws});
  EXPECT_EQ(out[1].data(), ws.data());
  EXPECT_EQ(out[2].data(), xs.data());
  for (int64_t i = 0; i < 4; ++i)
    EXPECT_EQ(out[0].at(i), static_cast<float>(xs.at(i) * ws.at(i)));
}

TEST(Executable, UnregisteredOpsGoThroughTheFallback) {
  Graph graph("custom");
  Value* x = graph.addInput(tensorType(DType::F32, {4}), "x");
  Node* custom = graph.createNode("mylib.triple", {x}, {tensorType(DType::F32, {4})});
  custom->result()->setName("tripled");
  graph.setOutputs({GraphBuilder(graph, nullptr).op("aten.neg", {custom->result()})});
  Tensor input = randomTensor(DType::F32, {4}, 8);
  try {
    Executable(graph, Plan{}, testOptions()).run({input});
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("mylib.triple"), std::string::npos) << error.what();
  }
  ExecutableOptions options = testOptions();
  options.fallback = [](const Node& node, const std::vector<const Tensor*>& inputs,
                        std::vector<Tensor>& outputs, const SymbolBindings&) {
    ASSERT_EQ(node.op(), "mylib.triple");
    Tensor result = Tensor::empty(DType::F32, {4}); // a fresh tensor: the step's result
    for (int64_t i = 0; i < 4; ++i)
      result.set(i, 3 * inputs[0]->at(i));
    outputs[0] = result;
  };
  std::vector<Tensor> out = Executable(graph, Plan{}, options).run({input});
  for (int64_t i = 0; i < 4; ++i)
    EXPECT_FLOAT_EQ(out[0].at(i), -3 * input.at(i));
}

TEST(Executable, AFallbacksOwnResultIsUsedWhereItLiesAndAnotherDtypeIsCopiedIn) {
  Graph graph("custom");
  Value* x = graph.addInput(tensorType(DType::F32, {4}), "x");
  Node* custom = graph.createNode("mylib.triple", {x}, {tensorType(DType::F32, {4})});
  Node* wide = graph.createNode("mylib.double", {x}, {tensorType(DType::F32, {4})});
  GraphBuilder builder(graph, nullptr);
  graph.setOutputs({custom->result(), builder.op("aten.neg", {custom->result()}), wide->result()});
  void* made = nullptr;
  ExecutableOptions options = testOptions();
  options.fallback = [&made](const Node& node, const std::vector<const Tensor*>& inputs,
                             std::vector<Tensor>& outputs, const SymbolBindings&) {
    bool triple = node.op() == "mylib.triple";
    // The triple's result in the output's dtype, the double's in f64 (not the node's dtype).
    Tensor result = Tensor::empty(triple ? DType::F32 : DType::F64, {4});
    for (int64_t i = 0; i < 4; ++i)
      result.set(i, (triple ? 3 : 2) * inputs[0]->at(i));
    if (triple) made = result.data();
    outputs[0] = result;
  };
  Tensor input = randomTensor(DType::F32, {4}, 8);
  std::vector<Tensor> out = Executable(graph, Plan{}, options).run({input});
  EXPECT_EQ(out[0].data(), made); // no copy: the fallback's tensor is the graph's output
  EXPECT_EQ(out[2].dtype(), DType::F32);
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_FLOAT_EQ(out[0].at(i), 3 * input.at(i));
    EXPECT_FLOAT_EQ(out[1].at(i), -3 * input.at(i));
    EXPECT_FLOAT_EQ(out[2].at(i), static_cast<float>(2 * double(input.at(i))));
  }
}

TEST(Executable, GroupedStridedConvolutionFromTheLibraryMatchesTheReference) {
  Graph graph("conv");
  Value* x = graph.addInput(tensorType(DType::F32, {2, 4, 7, 6}), "x");
  Value* w = graph.addInput(tensorType(DType::F32, {6, 2, 3, 3}), "w");
  Value* b = graph.addInput(tensorType(DType::F32, {6}), "b");
  AttrMap attrs = intListAttr("stride", {2, 1});
  attrs.set("padding", IntList{1, 2});
  attrs.set("dilation", IntList{1, 2});
  attrs.set("transposed", false);
  attrs.set("output_padding", IntList{0, 0});
  attrs.set("groups", SymExpr(2));
  Value* y = GraphBuilder(graph, nullptr).op("aten.convolution", {x, w, b}, attrs);
  graph.setOutputs({y});
  Plan plan;
  choose(plan, y->definingNode(), "conv", KernelKind::Library);
  ExecutableOptions options = testOptions();
  options.check = true;
  Executable executable(graph, plan, options);
  executable.run({randomTensor(DType::F32, {2, 4, 7, 6}, 1),
                  randomTensor(DType::F32, {6, 2, 3, 3}, 2), randomTensor(DType::F32, {6}, 3)});
  const KernelStats& stats = executable.stats().kernels.at("conv");
  EXPECT_EQ(stats.implementation, "library:aten.convolution");
  EXPECT_LT(stats.maxAbsError, 1e-4);
}

TEST(Executable, CheckModeMeasuresEachKernelAgainstItsReference) {
  LinearRelu model;
  std::vector<Tensor> inputs{randomTensor(DType::F32, {6, 4}, 1),
                             randomTensor(DType::F32, {3, 4}, 2), randomTensor(DType::F32, {3}, 3)};
  ExecutableOptions options = testOptions();
  options.check = true;
  Executable checked(model.graph, model.plan, options);
  std::vector<Tensor> out = checked.run(inputs);
  EXPECT_LT(checked.stats().kernels.at("k0").maxAbsError, 1e-5);
  EXPECT_LT(checked.stats().kernels.at("k1").maxRelError, 1e-6);
  std::vector<Tensor> unchecked = Executable(model.graph, model.plan, testOptions()).run(inputs);
  EXPECT_EQ(maxAbsDifference(out[0], unchecked[0]), 0.0) << "check mode changed the outputs";

  options.afterStep = [](const std::string& kernel, std::vector<Tensor>& outputs) {
    if (kernel == "k1") outputs[0].set(0, outputs[0].at(0) + 2.5); // a planted wrong element
  };
  Executable planted(model.graph, model.plan, options);
  planted.run(inputs);
  EXPECT_NEAR(planted.stats().kernels.at("k1").maxAbsError, 2.5, 1e-5);
  EXPECT_LT(planted.stats().kernels.at("k0").maxAbsError, 1e-5);
}

// Profiling on the host: calls 2..6 time every step by the steady clock; each kernel gets the
// median time and the IR's bytes and FLOPs at the run's sizes, and no peak share (the host has
// no known peak). The first call and calls after the fifth profiled one are not profiled.
TEST(Executable, ProfilingTimesEveryKernelOfCallsTwoToSix) {
  LinearRelu model;
  ExecutableOptions options = testOptions();
  options.profile = true;
  Executable executable(model.graph, model.plan, options);
  Tensor x = randomTensor(DType::F32, {5, 4}, 1), w = randomTensor(DType::F32, {3, 4}, 2),
         b = randomTensor(DType::F32, {3}, 3);
  executable.run({x, w, b});
  for (const auto& [name, stats] : executable.stats().kernels)
    EXPECT_EQ(stats.profileRuns, 0) << name << ": the first call is not profiled";
  for (int call = 2; call <= 8; ++call)
    executable.run({x, w, b});
  const auto& kernels = executable.stats().kernels;
  ASSERT_EQ(kernels.size(), 3u); // k0, k1 and the permute view
  for (const auto& [name, stats] : kernels) {
    EXPECT_EQ(stats.profileRuns, Executable::kProfiledCalls) << name;
    ASSERT_TRUE(stats.profileMs && stats.bytes && stats.flops) << name;
    EXPECT_GE(*stats.profileMs, 0) << name;
    EXPECT_FALSE(stats.peakFraction) << name;
    EXPECT_EQ(stats.bound, "") << name;
  }
  const KernelStats& mm = kernels.at("k0");
  EXPECT_GT(*mm.profileMs, 0);
  EXPECT_EQ(*mm.flops, 2.0 * 5 * 3 * 4);
  EXPECT_EQ(*mm.bytes, (5 * 4 + 4 * 3 + 5 * 3) * 4);
  const KernelStats& biasRelu = kernels.at("k1");
  EXPECT_GT(*biasRelu.profileMs, 0);
  EXPECT_EQ(*biasRelu.flops, 2.0 * 5 * 3); // add and relu, per output element
  EXPECT_EQ(*biasRelu.bytes, (5 * 3 + 3 + 5 * 3) * 4);
}

TEST(Executable, WithoutProfilingNoKernelIsProfiled) {
  LinearRelu model;
  Executable executable(model.graph, model.plan, testOptions());
  Tensor x = randomTensor(DType::F32, {2, 4}, 1), w = randomTensor(DType::F32, {3, 4}, 2),
         b = randomTensor(DType::F32, {3}, 3);
  for (int call = 0; call < 7; ++call)
    executable.run({x, w, b});
  for (const auto& [name, stats] : executable.stats().kernels) {
    EXPECT_EQ(stats.profileRuns, 0) << name;
    EXPECT_FALSE(stats.profileMs || stats.bytes || stats.flops || stats.peakFraction) << name;
  }
}

} // namespace
} // namespace loupe::testing
