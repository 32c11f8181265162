// Normalization ops: shape inference (symbolic dims, device-dependent statistics), hand-computed
// values, backward references against finite differences of the forward references, and
// decompositions evaluated op by op against the composite op's reference.
#include <map>

#include "compiler/ir/error.h"
#include "compiler/ops/graph_builder.h"
#include "compiler/ops/verifier.h"
#include "unit_tests/compiler/ops/nn/nn_test_support.h"

namespace loupe::testing {
namespace {

// ---- softmax

TEST(Softmax, InferenceKeepsShapeAndHandlesHalfToFloat) {
  Type x = tensorType({sym("s0"), 10});
  auto types =
      infer("aten._softmax", {&x}, attrs({{"dim", SymExpr(-1)}, {"half_to_float", false}}));
  EXPECT_EQ(types[0].tensor().shape, (Shape{sym("s0"), 10}));
  Type half = tensorType({4}, DType::F16);
  EXPECT_EQ(
      infer("aten._log_softmax", {&half}, attrs({{"dim", SymExpr(0)}, {"half_to_float", true}}))[0]
          .tensor()
          .dtype,
      DType::F32);
  EXPECT_THROW(infer("aten._softmax", {&x}, attrs({{"dim", SymExpr(2)}, {"half_to_float", false}})),
               Error);
  EXPECT_THROW(infer("aten._softmax", {&x}, attrs({{"dim", SymExpr(0)}, {"half_to_float", true}})),
               Error);
}

TEST(Softmax, HandComputedValues) {
  Tensor x = tensor({2, 2}, {0, std::log(3.0), 1000, 1000}); // the second row must not overflow
  AttrMap a = attrs({{"dim", SymExpr(1)}, {"half_to_float", false}});
  expectAllNear(run("aten._softmax", {&x}, a)[0].toDoubles(), {0.25, 0.75, 0.5, 0.5}, 1e-12,
                "softmax");
  expectAllNear(run("aten._log_softmax", {&x}, a)[0].toDoubles(),
                {std::log(0.25), std::log(0.75), std::log(0.5), std::log(0.5)}, 1e-12,
                "log_softmax");
}

TEST(Softmax, BackwardMatchesFiniteDifferences) {
  Tensor x = randomTensor({2, 3, 4}, 30);
  for (const char* name : {"aten._softmax", "aten._log_softmax"}) {
    AttrMap a = attrs({{"dim", SymExpr(1)}, {"half_to_float", false}});
    Tensor y = run(name, {&x}, a)[0];
    Tensor upstream = randomTensor(y.shape(), 31);
    auto grad = run(std::string(name) + "_backward_data", {&upstream, &y},
                    attrs({{"dim", SymExpr(1)}, {"input_dtype", DType::F64}}));
    expectGradientMatches(
        grad[0],
        [&](const Doubles& v) {
          Tensor t = tensor(x.shape(), v);
          return run(name, {&t}, a)[0].toDoubles();
        },
        x, upstream, name);
  }
}

TEST(Softmax, BackwardResultHasInputDtype) {
  Type g = tensorType({3, 5}), y = tensorType({3, 5}), other = tensorType({3, 4});
  AttrMap a = attrs({{"dim", SymExpr(-1)}, {"input_dtype", DType::F16}});
  EXPECT_EQ(infer("aten._softmax_backward_data", {&g, &y}, a)[0].tensor().dtype, DType::F16);
  EXPECT_THROW(infer("aten._log_softmax_backward_data", {&g, &other}, a), Error);
}

// ---- layer norm

AttrMap layerNormAttrs(IntList normalizedShape, double eps) {
  return attrs({{"normalized_shape", std::move(normalizedShape)}, {"eps", eps}});
}

TEST(LayerNorm, SymbolicStatisticsShapes) {
  Type x = tensorType({sym("s0"), sym("s1"), 4, 8});
  Type w = tensorType({4, 8});
  auto types = infer("aten.native_layer_norm", {&x, &w, &w}, layerNormAttrs(ints({4, 8}), 1e-5));
  ASSERT_EQ(types.size(), 3u);
  EXPECT_EQ(types[0].tensor().shape, x.tensor().shape);
  EXPECT_EQ(types[1].tensor().shape, (Shape{sym("s0"), sym("s1"), 1, 1}));
  EXPECT_EQ(types[2].tensor().shape, (Shape{sym("s0"), sym("s1"), 1, 1}));

  Type halfCuda = tensorType({2, 8}, DType::F16);
  halfCuda.tensor().device = Device{Device::Kind::CUDA, 0};
  auto cuda = infer("aten.native_layer_norm", {&halfCuda, nullptr, nullptr},
                    layerNormAttrs(ints({8}), 1e-5));
  EXPECT_EQ(cuda[0].tensor().dtype, DType::F16);
  EXPECT_EQ(cuda[1].tensor().dtype, DType::F32);
}

TEST(LayerNorm, ClearErrors) {
  Type x = tensorType({2, 8});
  Type w = tensorType({7});
  EXPECT_THROW(
      infer("aten.native_layer_norm", {&x, nullptr, nullptr}, layerNormAttrs(ints({4}), 0.0)),
      Error);
  EXPECT_THROW(infer("aten.native_layer_norm", {&x, &w, nullptr}, layerNormAttrs(ints({8}), 0.0)),
               Error);
  EXPECT_THROW(infer("aten.native_layer_norm", {&x, nullptr, nullptr}, layerNormAttrs({}, 0.0)),
               Error);
}

TEST(LayerNorm, HandComputedValues) {
  Tensor x = tensor({1, 4}, {1, 2, 3, 4});
  Tensor w = tensor({4}, {1, 2, 1, 1}), b = tensor({4}, {0, 0, 0, 10});
  auto out = run("aten.native_layer_norm", {&x, &w, &b}, layerNormAttrs(ints({4}), 0.0));
  double rstd = 1 / std::sqrt(1.25); // biased variance of 1..4
  expectAllNear(out[0].toDoubles(), {-1.5 * rstd, -1.0 * rstd, 0.5 * rstd, 1.5 * rstd + 10}, 1e-12,
                "out");
  expectAllNear(out[1].toDoubles(), {2.5}, 1e-12, "mean");
  expectAllNear(out[2].toDoubles(), {rstd}, 1e-12, "rstd");
}

TEST(LayerNorm, BackwardMatchesFiniteDifferences) {
  Tensor x = randomTensor({3, 2, 4}, 40), w = randomTensor({2, 4}, 41),
         b = randomTensor({2, 4}, 42);
  AttrMap a = layerNormAttrs(ints({2, 4}), 1e-5);
  auto forward = run("aten.native_layer_norm", {&x, &w, &b}, a);
  Tensor upstream = randomTensor(x.shape(), 43);
  AttrMap backwardAttrs = a;
  backwardAttrs.erase("eps");
  backwardAttrs.set("output_mask", BoolList{true, true, true});
  auto grads = run("aten.native_layer_norm_backward",
                   {&upstream, &x, &forward[1], &forward[2], &w, &b}, backwardAttrs);
  auto layerNorm = [&](const Tensor* input, const Tensor* weight, const Tensor* bias) {
    return run("aten.native_layer_norm", {input, weight, bias}, a)[0].toDoubles();
  };
  expectGradientMatches(
      grads[0],
      [&](const Doubles& v) {
        Tensor t = tensor(x.shape(), v);
        return layerNorm(&t, &w, &b);
      },
      x, upstream, "grad_input");
  expectGradientMatches(
      grads[1],
      [&](const Doubles& v) {
        Tensor t = tensor(w.shape(), v);
        return layerNorm(&x, &t, &b);
      },
      w, upstream, "grad_weight");
  expectGradientMatches(
      grads[2],
      [&](const Doubles& v) {
        Tensor t = tensor(b.shape(), v);
        return layerNorm(&x, &w, &t);
      },
      b, upstream, "grad_bias");

  backwardAttrs.set("output_mask", BoolList{true, false, false});
  auto masked = run("aten.native_layer_norm_backward",
                    {&upstream, &x, &forward[1], &forward[2], nullptr, nullptr}, backwardAttrs);
  EXPECT_EQ(masked[1].shape(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(masked[1].toDoubles(), Doubles(8, 0.0));
}

// ---- batch norm

TEST(BatchNorm, FunctionalTrainingShapesAndRunningStats) {
  Type x = tensorType({sym("s0"), 3, sym("s1")}), c = tensorType({3});
  AttrMap a = attrs({{"training", true}, {"momentum", 0.1}, {"eps", 1e-5}});
  auto types = infer("aten._native_batch_norm_legit_functional", {&x, &c, &c, &c, &c}, a);
  ASSERT_EQ(types.size(), 5u);
  EXPECT_EQ(types[0].tensor().shape, x.tensor().shape);
  for (size_t i = 1; i < 5; ++i)
    EXPECT_EQ(types[i].tensor().shape, (Shape{3})) << i;
  Type wrong = tensorType({4});
  EXPECT_THROW(infer("aten._native_batch_norm_legit_functional", {&x, &wrong, &c, &c, &c}, a),
               Error);

  // One channel holding 1..4: mean 2.5, biased variance 1.25, unbiased 5/3.
  Tensor input = tensor({4, 1}, {1, 2, 3, 4});
  Tensor runningMean = tensor({1}, {0}), runningVar = tensor({1}, {1});
  auto out = run("aten._native_batch_norm_legit_functional",
                 {&input, nullptr, nullptr, &runningMean, &runningVar},
                 attrs({{"training", true}, {"momentum", 0.1}, {"eps", 0.0}}));
  double rstd = 1 / std::sqrt(1.25);
  expectAllNear(out[0].toDoubles(), {-1.5 * rstd, -0.5 * rstd, 0.5 * rstd, 1.5 * rstd}, 1e-12,
                "out");
  expectAllNear(out[1].toDoubles(), {2.5}, 1e-12, "save_mean");
  expectAllNear(out[2].toDoubles(), {rstd}, 1e-12, "save_rstd");
  expectAllNear(out[3].toDoubles(), {0.25}, 1e-12, "new_running_mean");
  expectAllNear(out[4].toDoubles(), {0.1 * 5.0 / 3.0 + 0.9}, 1e-12, "new_running_var");
}

TEST(BatchNorm, InferenceUsesRunningStatsAndSavesEmptyStatsOnCpu) {
  Tensor x = tensor({1, 2, 2}, {1, 3, 5, 9});
  Tensor w = tensor({2}, {2, 1}), b = tensor({2}, {0, 1});
  Tensor mean = tensor({2}, {1, 5}), var = tensor({2}, {4, 16});
  auto out = run("aten._native_batch_norm_legit_no_training", {&x, &w, &b, &mean, &var},
                 attrs({{"momentum", 0.1}, {"eps", 0.0}}));
  EXPECT_EQ(out[0].toDoubles(), (Doubles{0, 2, 1, 2}));
  EXPECT_EQ(out[1].shape(), (std::vector<int64_t>{0}));

  Type cudaInput = tensorType({2, 2, 2}), c = tensorType({2});
  cudaInput.tensor().device = Device{Device::Kind::CUDA, 0};
  auto types = infer("aten.native_batch_norm", {&cudaInput, nullptr, nullptr, &c, &c},
                     attrs({{"training", false}, {"momentum", 0.1}, {"eps", 1e-5}}));
  EXPECT_EQ(types[1].tensor().shape, (Shape{2}));
  Type cpuInput = tensorType({2, 2, 2});
  EXPECT_THROW(infer("aten.native_batch_norm", {&cpuInput, nullptr, nullptr, nullptr, nullptr},
                     attrs({{"training", false}, {"momentum", 0.1}, {"eps", 1e-5}})),
               Error);
}

TEST(BatchNorm, NativeTrainingWithoutRunningStats) {
  Tensor x = randomTensor({3, 2, 2}, 50);
  auto legacy = run("aten.native_batch_norm", {&x, nullptr, nullptr, nullptr, nullptr},
                    attrs({{"training", true}, {"momentum", 0.1}, {"eps", 1e-5}}));
  Tensor mean = tensor({2}, {0, 0}), var = tensor({2}, {1, 1});
  auto functional =
      run("aten._native_batch_norm_legit_functional", {&x, nullptr, nullptr, &mean, &var},
          attrs({{"training", true}, {"momentum", 0.1}, {"eps", 1e-5}}));
  for (size_t i = 0; i < 3; ++i)
    expectAllNear(legacy[i].toDoubles(), functional[i].toDoubles(), 0,
                  "result " + std::to_string(i));
}

TEST(BatchNorm, BackwardMatchesFiniteDifferences) {
  Tensor x = randomTensor({3, 2, 2, 3}, 60), w = randomTensor({2}, 61), b = randomTensor({2}, 62);
  Tensor runningMean = randomTensor({2}, 63), runningVar = tensor({2}, {0.5, 2.0});
  for (bool train : {true, false}) {
    auto forward = [&](const Tensor* input, const Tensor* weight, const Tensor* bias) {
      return run("aten._native_batch_norm_legit_functional",
                 {input, weight, bias, &runningMean, &runningVar},
                 attrs({{"training", train}, {"momentum", 0.1}, {"eps", 1e-3}}));
    };
    auto saved = forward(&x, &w, &b);
    Tensor upstream = randomTensor(x.shape(), 64);
    auto grads =
        run("aten.native_batch_norm_backward",
            {&upstream, &x, &w, &runningMean, &runningVar, train ? &saved[1] : nullptr,
             train ? &saved[2] : nullptr},
            attrs({{"train", train}, {"eps", 1e-3}, {"output_mask", BoolList{true, true, true}}}));
    std::string mode = train ? "train " : "eval ";
    expectGradientMatches(
        grads[0],
        [&](const Doubles& v) {
          Tensor t = tensor(x.shape(), v);
          return forward(&t, &w, &b)[0].toDoubles();
        },
        x, upstream, mode + "grad_input");
    expectGradientMatches(
        grads[1],
        [&](const Doubles& v) {
          Tensor t = tensor(w.shape(), v);
          return forward(&x, &t, &b)[0].toDoubles();
        },
        w, upstream, mode + "grad_weight");
    expectGradientMatches(
        grads[2],
        [&](const Doubles& v) {
          Tensor t = tensor(b.shape(), v);
          return forward(&x, &w, &t)[0].toDoubles();
        },
        b, upstream, mode + "grad_bias");
  }
}

TEST(BatchNorm, InferenceBackwardAcceptsTheEmptySavedStatsOfEvalMode) {
  // _native_batch_norm_legit_no_training returns [0]-shaped save_mean/save_invstd, and the
  // backward of an eval-mode batch norm receives them.
  SymExpr s0 = SymExpr::symbol("s0");
  Type x = tensorType({s0, 4, 5}), perChannel = tensorType({4}), empty = tensorType({0});
  AttrMap a = attrs({{"eps", 1e-5}, {"output_mask", BoolList{true, true, true}}});
  a.set("train", false);
  auto types = infer("aten.native_batch_norm_backward",
                     {&x, &x, &perChannel, &perChannel, &perChannel, &empty, &empty}, a);
  EXPECT_EQ(types[0].str(), "f32[s0,4,5]");
  EXPECT_EQ(types[1].str(), "f32[4]");
  a.set("train", true);
  EXPECT_THROW(infer("aten.native_batch_norm_backward",
                     {&x, &x, &perChannel, &perChannel, &perChannel, &empty, &empty}, a),
               Error);
}

// ---- decompositions

// Builds `name` over fresh inputs, replaces it with its decomposition, and evaluates the
// replacement node by node with the reference implementations.
std::vector<Tensor> runDecomposed(std::string_view name, const std::vector<const Tensor*>& inputs,
                                  const AttrMap& attributes) {
  Graph graph;
  std::vector<Value*> operands;
  for (const Tensor* t : inputs)
    operands.push_back(
        t ? graph.addInput(tensorType(Shape(t->shape().begin(), t->shape().end()), t->dtype()))
          : nullptr);
  GraphBuilder atEnd(graph, nullptr);
  atEnd.opResults(name, operands, attributes);
  Node* composite = atEnd.lastCreated();
  GraphBuilder before(graph, composite);
  std::vector<Value*> replacement = op(name).decompose(*composite, before);
  EXPECT_EQ(replacement.size(), composite->numResults());
  graph.setOutputs(replacement);
  graph.eraseNode(composite);
  verify(graph);

  std::map<const Value*, Tensor> values;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i]) values[operands[i]] = *inputs[i];
  for (Node* node : graph.nodes()) {
    EXPECT_FALSE(node->op() == name) << "the decomposition re-emits " << name;
    std::vector<const Tensor*> args;
    for (Value* v : node->operands())
      args.push_back(v ? &values.at(v) : nullptr);
    std::vector<Type> types;
    for (Value* r : node->results())
      types.push_back(r->type());
    auto results = runReference(op(node->op()), args, node->attrs(), types, {});
    for (size_t i = 0; i < results.size(); ++i)
      values[node->result(i)] = results[i];
  }
  std::vector<Tensor> out;
  for (Value* v : graph.outputs())
    out.push_back(values.at(v));
  return out;
}

void expectDecompositionMatches(std::string_view name, const std::vector<const Tensor*>& inputs,
                                const AttrMap& attributes) {
  auto expected = run(name, inputs, attributes);
  auto actual = runDecomposed(name, inputs, attributes);
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(actual[i].shape(), expected[i].shape()) << name << " result " << i;
    EXPECT_EQ(actual[i].dtype(), expected[i].dtype()) << name << " result " << i;
    expectAllNear(actual[i].toDoubles(), expected[i].toDoubles(), 1e-12,
                  std::string(name) + " result " + std::to_string(i));
  }
}

TEST(Decomposition, SoftmaxAndLogSoftmax) {
  Tensor x = randomTensor({3, 4, 5}, 70);
  for (const char* name : {"aten._softmax", "aten._log_softmax"})
    expectDecompositionMatches(name, {&x}, attrs({{"dim", SymExpr(-2)}, {"half_to_float", false}}));
}

TEST(Decomposition, SoftmaxBackward) {
  Tensor g = randomTensor({3, 4}, 71), y = randomTensor({3, 4}, 72);
  expectDecompositionMatches("aten._softmax_backward_data", {&g, &y},
                             attrs({{"dim", SymExpr(1)}, {"input_dtype", DType::F64}}));
}

TEST(Decomposition, LayerNormWithAndWithoutAffine) {
  Tensor x = randomTensor({2, 3, 4}, 73), w = randomTensor({3, 4}, 74),
         b = randomTensor({3, 4}, 75);
  AttrMap a = layerNormAttrs(ints({3, 4}), 1e-5);
  expectDecompositionMatches("aten.native_layer_norm", {&x, &w, &b}, a);
  expectDecompositionMatches("aten.native_layer_norm", {&x, nullptr, nullptr}, a);
}

} // namespace
} // namespace loupe::testing
