// View ops: symbolic shape and stride inference, zero-copy views that alias the input's storage
// and agree with the reference copy, and the decompositions of reshape and the multi-result views.
#include <cstdint>
#include <limits>

#include "compiler/ir/graph.h"
#include "compiler/ops/graph_builder.h"
#include "unit_tests/compiler/ops/data/op_test_support.h"

namespace loupe {
namespace {

using namespace loupe::testing;

constexpr int64_t kToTheEnd = std::numeric_limits<int64_t>::max();

// A strided tensor over a fresh 0..n-1 buffer: elements at storage positions are their own index.
struct Strided {
  Tensor storage;
  Tensor tensor;
};

Strided strided(int64_t storageSize, std::vector<int64_t> shape, std::vector<int64_t> strides,
                int64_t offset = 0) {
  Tensor storage = iota({storageSize});
  return {storage, storage.view(std::move(shape), std::move(strides), offset)};
}

// Checks one view op on `x`: the ViewFn gives `expected` (row-major values), starts
// `expectedOffset` elements into x's storage and shares it (writes through a view are seen by a
// fresh view); the reference copies the same values; inference on x's layout predicts the
// view's shape and strides.
void expectView(std::string_view op, const Tensor& x, const AttrMap& attributes,
                const std::vector<double>& expected, int64_t expectedOffset) {
  SCOPED_TRACE(std::string(op) + " of " + x.describe());
  const OpInfo& info = opInfo(op);
  ASSERT_EQ(info.kind, OpKind::View);
  ASSERT_TRUE(info.view);
  Tensor v = info.view(x, attributes);
  EXPECT_EQ(v.toDoubles(), expected);
  EXPECT_EQ(static_cast<const float*>(v.data()) - static_cast<const float*>(x.data()),
            expectedOffset);

  Type inferred = inferOne(op, {typeOf(x)}, attributes);
  EXPECT_EQ(evaluateShape(inferred.tensor().shape, {}), v.shape());
  std::vector<int64_t> vStrides = v.strides();
  EXPECT_EQ(evaluateShape(inferred.tensor().effectiveStrides(), {}), vStrides);

  EXPECT_EQ(runOne(op, {&x}, attributes).toDoubles(), expected);

  // Expanded views alias one element several times, so compare with what v itself reads back.
  // Values are restored afterwards: callers check several views of one tensor.
  for (int64_t i = 0; i < v.numel(); ++i)
    v.set(i, 1000.0 + static_cast<double>(i));
  std::vector<double> written = v.toDoubles();
  EXPECT_EQ(info.view(x, attributes).toDoubles(), written);
  if (!written.empty()) {
    EXPECT_GE(written.back(), 1000.0);
  }
  for (int64_t i = 0; i < v.numel(); ++i)
    v.set(i, expected[static_cast<size_t>(i)]);
}

// Every op of the three families carries what the passes and the runtime rely on.
TEST(OpFamilies, EveryOpIsComplete) {
  const std::vector<std::string> singleViews = {
      "aten.view",    "aten._unsafe_view", "aten.permute",      "aten.transpose.int",
      "aten.t",       "aten.expand",       "aten.squeeze.dim",  "aten.squeeze.dims",
      "aten.squeeze", "aten.unsqueeze",    "aten.slice.Tensor", "aten.select.int",
      "aten.alias",   "aten.detach",       "aten.as_strided"};
  const std::vector<std::string> others = {"aten.split.Tensor",
                                           "aten.split_with_sizes",
                                           "aten.unbind.int",
                                           "aten.reshape",
                                           "aten.cat",
                                           "aten.stack",
                                           "aten.clone",
                                           "aten.copy",
                                           "aten.index_select",
                                           "aten.gather",
                                           "aten.scatter_add",
                                           "aten.embedding",
                                           "aten.embedding_dense_backward",
                                           "aten.constant_pad_nd",
                                           "aten.slice_backward",
                                           "aten.select_backward",
                                           "aten.mm",
                                           "aten.bmm",
                                           "aten.addmm",
                                           "aten.baddbmm",
                                           "aten.dot"};
  auto check = [](const std::string& name, bool hasView) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(registered(name));
    const OpInfo& info = opInfo(name);
    EXPECT_TRUE(info.infer);
    EXPECT_TRUE(info.reference);
    EXPECT_FALSE(info.summary.empty());
    EXPECT_EQ(static_cast<bool>(info.view), hasView);
  };
  for (const std::string& name : singleViews)
    check(name, true);
  for (const std::string& name : others)
    check(name, false);
}

// ---- shape and stride inference ------------------------------------------------------------

TEST(ViewInference, ViewResolvesMinusOneSymbolically) {
  SymExpr s0 = sym("s0");
  EXPECT_EQ(inferOne("aten.view", {tensorType({s0, 128})}, attrs({{"size", IntList{-1}}})).str(),
            "f32[128*s0]");
  EXPECT_EQ(
      inferOne("aten.view", {tensorType({s0, 128})}, attrs({{"size", IntList{-1, 64}}})).str(),
      "f32[2*s0,64]");
  EXPECT_EQ(
      inferOne("aten.view", {tensorType({s0 * 4, 3})}, attrs({{"size", IntList{s0, -1}}})).str(),
      "f32[s0,12]");
}

// x.reshape(-1, 2, 4) on [s0, 4]: 4*s0 does not divide by 8 term by term, but torch guards
// that it does; the -1 becomes a floor division, and the view of a contiguous input is free.
TEST(ViewInference, MinusOneThatDividesOnlyUnderGuardsIsAFloorDivision) {
  SymExpr s0 = sym("s0");
  Type viewed = inferOne("aten.view", {tensorType({s0, 4})}, attrs({{"size", IntList{-1, 2, 4}}}));
  EXPECT_TRUE(SymExpr::equalWhenDivisionsExact(viewed.tensor().shape[0], SymExpr::floorDiv(s0, 2)))
      << viewed.str();
  EXPECT_TRUE(viewed.tensor().isContiguous()) << viewed.str();
}

TEST(ViewInference, ImpossibleSizesNameBothShapes) {
  std::string message = errorMessage([] {
    inferOne("aten.view", {tensorType({4, 6})}, attrs({{"size", IntList{5, -1}}}));
  });
  EXPECT_NE(message.find("[5,-1]"), std::string::npos) << message;
  EXPECT_NE(message.find("[4,6]"), std::string::npos) << message;
  message = errorMessage([] {
    inferOne("aten.reshape", {tensorType({4, 6})}, attrs({{"shape", IntList{5, 5}}}));
  });
  EXPECT_NE(message.find("[5,5]"), std::string::npos) << message;
  EXPECT_NE(errorMessage([] {
              inferOne("aten.view", {tensorType({4, 6})}, attrs({{"size", IntList{-1, -1}}}));
            }).find("only one"),
            std::string::npos);
}

TEST(ViewInference, ViewOfANonViewableLayoutIsAnError) {
  TensorType transposed = tensorType({8, 4}, DType::F32, Shape{1, 8});
  std::string message = errorMessage([&] {
    inferOne("aten.view", {transposed}, attrs({{"size", IntList{32}}}));
  });
  EXPECT_NE(message.find("reshape"), std::string::npos) << message;
  // Splitting a dim of a transposed tensor is viewable, with strides derived from the input's.
  EXPECT_EQ(inferOne("aten.view", {transposed}, attrs({{"size", IntList{2, 4, 4}}})).str(),
            "f32[2,4,4]<strides=[4,1,8]>");
  // reshape copies instead, so its result is contiguous.
  EXPECT_EQ(inferOne("aten.reshape", {transposed}, attrs({{"shape", IntList{32}}})).str(),
            "f32[32]");
}

TEST(ViewInference, PermuteAndTransposeGiveStrides) {
  EXPECT_EQ(inferOne("aten.permute", {tensorType({4, 8})}, attrs({{"dims", IntList{1, 0}}})).str(),
            "f32[8,4]<strides=[1,8]>");
  SymExpr s0 = sym("s0");
  EXPECT_EQ(
      inferOne("aten.permute", {tensorType({s0, 3, 5})}, attrs({{"dims", IntList{2, 0, 1}}})).str(),
      "f32[5,s0,3]<strides=[1,15,5]>");
  EXPECT_EQ(inferOne("aten.transpose.int", {tensorType({s0, 7})},
                     attrs({{"dim0", SymExpr(0)}, {"dim1", SymExpr(-1)}}))
                .str(),
            "f32[7,s0]<strides=[1,7]>");
  EXPECT_EQ(inferOne("aten.t", {tensorType({2, 3})}).str(), "f32[3,2]<strides=[1,3]>");
  EXPECT_EQ(inferOne("aten.t", {tensorType({5})}).str(), "f32[5]");
  errorMessage([] { inferOne("aten.t", {tensorType({2, 3, 4})}); });
  errorMessage([] {
    inferOne("aten.permute", {tensorType({2, 3})}, attrs({{"dims", IntList{0, 0}}}));
  });
  // A permutation that only moves a size-1 dim is still contiguous, as in torch.
  EXPECT_TRUE(inferOne("aten.permute", {tensorType({1, 8})}, attrs({{"dims", IntList{1, 0}}}))
                  .tensor()
                  .isContiguous());
}

TEST(ViewInference, SliceClampsLikeTorch) {
  auto slice = [](Shape shape, Attribute start, Attribute end, int64_t step = 1) {
    return inferOne(
               "aten.slice.Tensor", {tensorType(std::move(shape))},
               attrs(
                   {{"dim", SymExpr(0)}, {"start", start}, {"end", end}, {"step", SymExpr(step)}}))
        .tensor()
        .shape[0]
        .str();
  };
  EXPECT_EQ(slice({10}, SymExpr(2), SymExpr(kToTheEnd)), "8");
  EXPECT_EQ(slice({10}, SymExpr(-100), SymExpr(100)), "10");
  EXPECT_EQ(slice({10}, SymExpr(-3), NoneAttr{}), "3");
  EXPECT_EQ(slice({10}, SymExpr(8), SymExpr(2)), "0");
  EXPECT_EQ(slice({10}, SymExpr(1), SymExpr(10), 3), "3");
  EXPECT_EQ(slice({10}, NoneAttr{}, SymExpr(-1), 2), "5");
  SymExpr s0 = sym("s0");
  EXPECT_EQ(slice({s0}, SymExpr(2), SymExpr(kToTheEnd)), "s0 - 2");
  EXPECT_EQ(slice({s0}, SymExpr(-3), NoneAttr{}), "3");
  EXPECT_EQ(slice({s0}, NoneAttr{}, SymExpr(-1)), "s0 - 1");
  EXPECT_EQ(slice({s0 * 2}, s0, SymExpr(kToTheEnd)), "s0");
  // Undecidable against s0: the bounds are kept as written.
  EXPECT_EQ(slice({s0}, SymExpr(1), SymExpr(5)), "4");
  EXPECT_EQ(slice({s0}, SymExpr(0), s0 - 1, 2), "(s0//2)");
  errorMessage([] {
    inferOne("aten.slice.Tensor", {tensorType({4})},
             attrs({{"dim", SymExpr(0)}, {"step", SymExpr(0)}}));
  });
}

TEST(ViewInference, SliceStridesAndSymbolicStep) {
  SymExpr s0 = sym("s0");
  Type t = inferOne("aten.slice.Tensor", {tensorType({6, s0})},
                    attrs({{"dim", SymExpr(1)},
                           {"start", SymExpr(1)},
                           {"end", SymExpr(kToTheEnd)},
                           {"step", SymExpr(2)}}));
  EXPECT_EQ(t.str(), "f32[6,(s0//2)]<strides=[s0,2]>");
}

TEST(ViewInference, ExpandBroadcastsWithStrideZero) {
  SymExpr s0 = sym("s0");
  EXPECT_EQ(inferOne("aten.expand", {tensorType({1, s0})}, attrs({{"size", IntList{8, -1}}})).str(),
            "f32[8,s0]<strides=[0,1]>");
  EXPECT_EQ(
      inferOne("aten.expand", {tensorType({3, 1})}, attrs({{"size", IntList{2, 3, 4}}})).str(),
      "f32[2,3,4]<strides=[0,1,0]>");
  std::string message = errorMessage([] {
    inferOne("aten.expand", {tensorType({3})}, attrs({{"size", IntList{4}}}));
  });
  EXPECT_NE(message.find("[3]"), std::string::npos) << message;
  errorMessage([] {
    inferOne("aten.expand", {tensorType({3})}, attrs({{"size", IntList{-1, 3}}}));
  });
}

TEST(ViewInference, SqueezeUnsqueezeSelect) {
  SymExpr s0 = sym("s0");
  EXPECT_EQ(inferOne("aten.squeeze", {tensorType({1, s0, 1, 4})}).str(), "f32[s0,4]");
  EXPECT_EQ(inferOne("aten.squeeze.dim", {tensorType({1, s0})}, attrs({{"dim", SymExpr(1)}})).str(),
            "f32[1,s0]");
  EXPECT_EQ(
      inferOne("aten.squeeze.dims", {tensorType({1, s0, 1})}, attrs({{"dim", IntList{0, -1}}}))
          .str(),
      "f32[s0]");
  EXPECT_EQ(inferOne("aten.unsqueeze", {tensorType({s0, 4})}, attrs({{"dim", SymExpr(-1)}})).str(),
            "f32[s0,4,1]");
  EXPECT_EQ(inferOne("aten.select.int", {tensorType({s0, 4})},
                     attrs({{"dim", SymExpr(1)}, {"index", SymExpr(-1)}}))
                .str(),
            "f32[s0]<strides=[4]>");
  std::string message = errorMessage([] {
    inferOne("aten.select.int", {tensorType({3, 4})},
             attrs({{"dim", SymExpr(0)}, {"index", SymExpr(3)}}));
  });
  EXPECT_NE(message.find("out of range"), std::string::npos) << message;
  errorMessage([] { inferOne("aten.unsqueeze", {tensorType({3})}, attrs({{"dim", SymExpr(3)}})); });
}

TEST(ViewInference, SplitNeedsAConstantNumberOfChunks) {
  auto types = infer("aten.split.Tensor", {tensorType({10, 3})},
                     attrs({{"split_size", SymExpr(4)}, {"dim", SymExpr(0)}}));
  ASSERT_EQ(types.size(), 3u);
  EXPECT_EQ(types[2].str(), "f32[2,3]");
  SymExpr s0 = sym("s0");
  types = infer("aten.split_with_sizes", {tensorType({3, s0 + 2})},
                attrs({{"split_sizes", IntList{s0, 2}}, {"dim", SymExpr(1)}}));
  ASSERT_EQ(types.size(), 2u);
  EXPECT_EQ(types[0].str(), "f32[3,s0]<strides=[s0 + 2,1]>");
  EXPECT_EQ(infer("aten.split.Tensor", {tensorType({s0})}, attrs({{"split_size", s0}})).size(), 1u);
  errorMessage([&] {
    infer("aten.split.Tensor", {tensorType({s0})}, attrs({{"split_size", SymExpr(4)}}));
  });
  std::string message = errorMessage([&] {
    infer("aten.split_with_sizes", {tensorType({s0})}, attrs({{"split_sizes", IntList{s0, 1}}}));
  });
  EXPECT_NE(message.find("s0 + 1"), std::string::npos) << message;
}

// ---- views of concrete tensors
// -------------------------------------------------------------------

TEST(ViewTensors, ShapeChangesAliasTheInput) {
  Tensor x = iota({2, 6});
  expectView("aten.view", x, attrs({{"size", IntList{3, -1}}}), x.toDoubles(), 0);
  expectView("aten._unsafe_view", x, attrs({{"size", IntList{12}}}), x.toDoubles(), 0);
  expectView("aten.alias", x, {}, x.toDoubles(), 0);
  expectView("aten.detach", x, {}, x.toDoubles(), 0);
  expectView("aten.unsqueeze", x, attrs({{"dim", SymExpr(1)}}), x.toDoubles(), 0);
  Tensor column = iota({3, 1});
  expectView("aten.squeeze", column, {}, {0, 1, 2}, 0);
  expectView("aten.squeeze.dim", column, attrs({{"dim", SymExpr(-1)}}), {0, 1, 2}, 0);
  expectView("aten.squeeze.dims", column, attrs({{"dim", IntList{1}}}), {0, 1, 2}, 0);
}

TEST(ViewTensors, ReorderingViews) {
  Tensor x = iota({2, 3});
  expectView("aten.permute", x, attrs({{"dims", IntList{1, 0}}}), {0, 3, 1, 4, 2, 5}, 0);
  expectView("aten.transpose.int", x, attrs({{"dim0", SymExpr(0)}, {"dim1", SymExpr(1)}}),
             {0, 3, 1, 4, 2, 5}, 0);
  expectView("aten.t", x, {}, {0, 3, 1, 4, 2, 5}, 0);
  expectView("aten.expand", iota({2, 1}), attrs({{"size", IntList{2, 2, 3}}}),
             {0, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 1}, 0);
}

TEST(ViewTensors, SliceSelectAndAsStrided) {
  Tensor x = iota({3, 4});
  expectView("aten.slice.Tensor", x,
             attrs({{"dim", SymExpr(1)},
                    {"start", SymExpr(1)},
                    {"end", SymExpr(kToTheEnd)},
                    {"step", SymExpr(2)}}),
             {1, 3, 5, 7, 9, 11}, 1);
  expectView("aten.slice.Tensor", x, attrs({{"dim", SymExpr(0)}, {"start", SymExpr(-2)}}),
             {4, 5, 6, 7, 8, 9, 10, 11}, 4);
  expectView("aten.select.int", x, attrs({{"dim", SymExpr(0)}, {"index", SymExpr(-1)}}),
             {8, 9, 10, 11}, 8);
  expectView("aten.select.int", x, attrs({{"dim", SymExpr(1)}, {"index", SymExpr(2)}}), {2, 6, 10},
             2);
  expectView(
      "aten.as_strided", x,
      attrs({{"size", IntList{2, 2}}, {"stride", IntList{1, 4}}, {"storage_offset", SymExpr(5)}}),
      {5, 9, 6, 10}, 5);
}

TEST(ViewTensors, ViewsOfStridedInputsComposeStrides) {
  // x = storage[1::2] viewed as [3,2] with strides [4,2]: rows 1,3 | 5,7 | 9,11.
  Strided s = strided(12, {3, 2}, {4, 2}, 1);
  expectView("aten.permute", s.tensor, attrs({{"dims", IntList{1, 0}}}), {1, 5, 9, 3, 7, 11}, 0);
  expectView("aten.select.int", s.tensor, attrs({{"dim", SymExpr(1)}, {"index", SymExpr(1)}}),
             {3, 7, 11}, 2);
  expectView("aten.view", s.tensor, attrs({{"size", IntList{3, 2, 1}}}), {1, 3, 5, 7, 9, 11}, 0);
  // as_strided addresses the storage, not x's logical layout: offset 0 is storage[0].
  expectView("aten.as_strided", s.tensor,
             attrs({{"size", IntList{2}}, {"stride", IntList{3}}, {"storage_offset", SymExpr(0)}}),
             {0, 3}, -1);
  // Rows of x are equally spaced, so even flattening needs no copy; with gaps it would.
  expectView("aten.view", s.tensor, attrs({{"size", IntList{6}}}), {1, 3, 5, 7, 9, 11}, 0);
  Strided rows = strided(12, {3, 2}, {4, 1}, 1);
  errorMessage([&] { opInfo("aten.view").view(rows.tensor, attrs({{"size", IntList{6}}})); });
}

TEST(ViewTensors, MultiResultViewsMatchTheirSlices) {
  Tensor x = iota({5, 2});
  auto parts = run("aten.split.Tensor", {&x}, attrs({{"split_size", SymExpr(2)}}));
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].toDoubles(), (std::vector<double>{0, 1, 2, 3}));
  EXPECT_EQ(parts[2].toDoubles(), (std::vector<double>{8, 9}));
  parts = run("aten.split_with_sizes", {&x},
              attrs({{"split_sizes", IntList{1, 1}}, {"dim", SymExpr(1)}}));
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[1].toDoubles(), (std::vector<double>{1, 3, 5, 7, 9}));
  parts = run("aten.unbind.int", {&x}, attrs({{"dim", SymExpr(1)}}));
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].toDoubles(), (std::vector<double>{0, 2, 4, 6, 8}));
}

TEST(ViewTensors, ReshapeCopiesAStridedInput) {
  Tensor x = iota({2, 3});
  Tensor transposed = opInfo("aten.t").view(x, {});
  Tensor y = runOne("aten.reshape", {&transposed}, attrs({{"shape", IntList{-1}}}));
  EXPECT_EQ(y.toDoubles(), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  EXPECT_TRUE(y.isContiguous());
}

// ---- decompositions --------------------------------------------------------------------------

std::vector<std::string> opsOf(const Graph& graph) {
  std::vector<std::string> ops;
  for (Node* node : graph.nodes())
    ops.push_back(node->op());
  return ops;
}

std::vector<Value*> decompose(Graph& graph, Node* node) {
  GraphBuilder builder(graph, node, node->loc());
  return opInfo(node->op()).decompose(*node, builder);
}

Node* addNode(Graph& graph, std::string_view op, std::vector<Value*> operands, AttrMap attributes) {
  auto types = inferTypes(opInfo(op), operands, attributes);
  return graph.createNode(std::string(op), std::move(operands), std::move(types),
                          std::move(attributes));
}

TEST(ViewDecomposition, ReshapeIsAViewOnlyForContiguousInputs) {
  Graph graph;
  SymExpr s0 = sym("s0");
  Value* x = graph.addInput(tensorType({s0, 4}));
  Node* reshape = addNode(graph, "aten.reshape", {x}, attrs({{"shape", IntList{-1}}}));
  auto replaced = decompose(graph, reshape);
  ASSERT_EQ(replaced.size(), 1u);
  EXPECT_EQ(replaced[0]->type(), reshape->result()->type());
  EXPECT_EQ(opsOf(graph), (std::vector<std::string>{"aten.view", "aten.reshape"}));

  Graph strided;
  Value* y = strided.addInput(tensorType({4, s0}, DType::F32, Shape{1, 4}));
  reshape = addNode(strided, "aten.reshape", {y}, attrs({{"shape", IntList{-1}}}));
  replaced = decompose(strided, reshape);
  ASSERT_EQ(replaced.size(), 1u);
  EXPECT_EQ(replaced[0]->type(), reshape->result()->type());
  EXPECT_EQ(opsOf(strided),
            (std::vector<std::string>{"aten.clone", "aten._unsafe_view", "aten.reshape"}));
}

TEST(ViewDecomposition, SplitBecomesSlices) {
  Graph graph;
  SymExpr s0 = sym("s0");
  Value* x = graph.addInput(tensorType({s0, 10}));
  Node* split = addNode(graph, "aten.split.Tensor", {x},
                        attrs({{"split_size", SymExpr(4)}, {"dim", SymExpr(1)}}));
  auto replaced = decompose(graph, split);
  ASSERT_EQ(replaced.size(), split->numResults());
  for (size_t i = 0; i < replaced.size(); ++i) {
    EXPECT_EQ(replaced[i]->definingNode()->op(), "aten.slice.Tensor");
    EXPECT_EQ(replaced[i]->type(), split->result(i)->type());
  }
}

} // namespace
} // namespace loupe
