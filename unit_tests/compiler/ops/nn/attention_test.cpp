// Scaled dot-product attention (aten._scaled_dot_product_flash_attention_for_cpu and its
// backward): shape inference with symbolic dims, hand-computed values, the equivalences users
// rely on (causal = an additive -inf mask, grouped-query = repeated key/value heads), and the
// backward against finite differences of the forward.
#include <cmath>
#include <limits>

#include "compiler/ir/error.h"
#include "unit_tests/compiler/ops/nn/nn_test_support.h"

namespace loupe::testing {
namespace {

const std::string kForward = "aten._scaled_dot_product_flash_attention_for_cpu";
const std::string kBackward = "aten._scaled_dot_product_flash_attention_for_cpu_backward";
const double kInf = std::numeric_limits<double>::infinity();

AttrMap attentionAttrs(bool causal, std::optional<double> scale = std::nullopt) {
  AttrMap a = attrs({{"dropout_p", 0.0}, {"is_causal", causal}});
  a.set("scale", scale ? Attribute(*scale) : Attribute(NoneAttr{}));
  return a;
}

Doubles attend(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask,
               const AttrMap& a) {
  return run(kForward, {&q, &k, &v, mask}, a)[0].toDoubles();
}

TEST(Attention, SymbolicShapesAndLogsumexpDtype) {
  Type q = tensorType({sym("s0"), 4, sym("s1"), 16}),
       kv = tensorType({sym("s0"), 2, sym("s2"), 16});
  Type mask = tensorType({sym("s1"), sym("s2")});
  auto types = infer(kForward, {&q, &kv, &kv, &mask}, attentionAttrs(true));
  ASSERT_EQ(types.size(), 2u);
  EXPECT_EQ(types[0].str(), "f32[s0,4,s1,16]");
  EXPECT_EQ(types[1].str(), "f32[s0,4,s1]");

  Type half = tensorType({2, 2, 8, 16}, DType::F16);
  EXPECT_EQ(infer(kForward, {&half, &half, &half, nullptr}, attentionAttrs(false))[1].str(),
            "f32[2,2,8]");

  Type lse = tensorType({sym("s0"), 4, sym("s1")});
  auto grads = infer(kBackward, {&q, &q, &kv, &kv, &q, &lse, nullptr}, attentionAttrs(true));
  ASSERT_EQ(grads.size(), 3u);
  EXPECT_EQ(grads[0].str(), "f32[s0,4,s1,16]");
  EXPECT_EQ(grads[1].str(), "f32[s0,2,s2,16]");
  EXPECT_EQ(grads[2].str(), "f32[s0,2,s2,16]");
}

TEST(Attention, RejectsWhatTorchsKernelRejects) {
  Type q = tensorType({2, 4, 8, 16});
  auto expectShapeError = [&](const std::vector<const Type*>& operands, const AttrMap& a,
                              const std::string& fragment) {
    try {
      infer(kForward, operands, a);
      ADD_FAILURE() << "no error for " << fragment;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), "shape");
      EXPECT_NE(e.message().find(fragment), std::string::npos) << e.message();
    }
  };
  Type otherHeadDim = tensorType({2, 4, 8, 8}), threeHeads = tensorType({2, 3, 8, 16});
  Type boolMask = tensorType({8, 8}, DType::Bool), wideMask = tensorType({8, 9});
  Type rank3 = tensorType({4, 8, 16});
  expectShapeError({&q, &otherHeadDim, &otherHeadDim, nullptr}, attentionAttrs(false),
                   "does not match the batch and head size");
  expectShapeError({&q, &threeHeads, &threeHeads, nullptr}, attentionAttrs(false),
                   "not a multiple");
  expectShapeError({&q, &q, &q, &boolMask}, attentionAttrs(false), "must be additive");
  expectShapeError({&q, &q, &q, &wideMask}, attentionAttrs(false), "broadcast");
  expectShapeError({&rank3, &rank3, &rank3, nullptr}, attentionAttrs(false), "must be 4-D");
  AttrMap dropout = attentionAttrs(false);
  dropout.set("dropout_p", 0.1);
  expectShapeError({&q, &q, &q, nullptr}, dropout, "dropout");
}

TEST(Attention, HandComputedValues) {
  // One query against two keys: scores q.k / sqrt(2) = [1/sqrt(2), 0].
  Tensor q = tensor({1, 1, 1, 2}, {1, 0}), k = tensor({1, 1, 2, 2}, {1, 0, 0, 1}),
         v = tensor({1, 1, 2, 2}, {1, 2, 3, 4});
  auto results = run(kForward, {&q, &k, &v, nullptr}, attentionAttrs(false));
  double e0 = std::exp(1 / std::sqrt(2.0)), e1 = 1.0;
  double p0 = e0 / (e0 + e1), p1 = e1 / (e0 + e1);
  expectAllNear(results[0].toDoubles(), {p0 * 1 + p1 * 3, p0 * 2 + p1 * 4}, 1e-12, "out");
  expectAllNear(results[1].toDoubles(), {std::log(e0 + e1)}, 1e-12, "logsumexp");

  // An explicit scale of 0 averages the values.
  auto uniform = run(kForward, {&q, &k, &v, nullptr}, attentionAttrs(false, 0.0));
  expectAllNear(uniform[0].toDoubles(), {2, 3}, 1e-12, "scale=0");
}

TEST(Attention, CausalEqualsAnAdditiveMaskAndFullyMaskedRowsAreZero) {
  Tensor q = randomTensor({2, 2, 3, 4}, 1), k = randomTensor({2, 2, 5, 4}, 2),
         v = randomTensor({2, 2, 5, 4}, 3);
  Doubles upper(15);
  for (size_t i = 0; i < 3; ++i)
    for (size_t j = 0; j < 5; ++j)
      upper[i * 5 + j] = j > i ? -kInf : 0.0;
  Tensor causalMask = tensor({3, 5}, upper);
  expectAllNear(attend(q, k, v, nullptr, attentionAttrs(true)),
                attend(q, k, v, &causalMask, attentionAttrs(false)), 1e-12, "causal");

  // A per-batch mask broadcast over heads that hides every key from batch 1's first query.
  Doubles hidden(2 * 3 * 5, 0.0);
  for (size_t j = 0; j < 5; ++j)
    hidden[15 + j] = -kInf;
  Tensor mask = tensor({2, 1, 3, 5}, hidden);
  auto results = run(kForward, {&q, &k, &v, &mask}, attentionAttrs(false));
  Doubles out = results[0].toDoubles(), lse = results[1].toDoubles();
  for (size_t head = 0; head < 2; ++head) {
    size_t row = (2 + head) * 3; // batch 1, this head, query 0
    EXPECT_EQ(lse[row], 0.0);
    for (size_t e = 0; e < 4; ++e)
      EXPECT_EQ(out[row * 4 + e], 0.0);
    EXPECT_NE(out[(row + 1) * 4], 0.0);
  }
}

TEST(Attention, GroupedQueryHeadsShareKeyValueHeads) {
  Tensor q = randomTensor({1, 4, 3, 2}, 4), k = randomTensor({1, 2, 3, 2}, 5),
         v = randomTensor({1, 2, 3, 2}, 6);
  // Each key/value head repeated for the two query heads that read it.
  auto repeatHeads = [](const Tensor& t) {
    Doubles in = t.toDoubles(), out;
    for (size_t head = 0; head < 2; ++head)
      for (int copy = 0; copy < 2; ++copy)
        out.insert(out.end(), in.begin() + static_cast<ptrdiff_t>(head * 6),
                   in.begin() + static_cast<ptrdiff_t>((head + 1) * 6));
    return tensor({1, 4, 3, 2}, out);
  };
  Tensor kRepeated = repeatHeads(k), vRepeated = repeatHeads(v);
  expectAllNear(attend(q, k, v, nullptr, attentionAttrs(true)),
                attend(q, kRepeated, vRepeated, nullptr, attentionAttrs(true)), 1e-12, "gqa");
}

TEST(Attention, BackwardMatchesFiniteDifferences) {
  Tensor q = randomTensor({1, 4, 3, 2}, 10), k = randomTensor({1, 2, 4, 2}, 11),
         v = randomTensor({1, 2, 4, 2}, 12), mask = randomTensor({3, 4}, 13);
  for (bool causal : {false, true}) {
    AttrMap a = attentionAttrs(causal, 0.7);
    auto forward = run(kForward, {&q, &k, &v, &mask}, a);
    Tensor upstream = randomTensor(q.shape(), 14);
    auto grads = run(kBackward, {&upstream, &q, &k, &v, &forward[0], &forward[1], &mask}, a);
    std::string what = causal ? "causal " : "";
    expectGradientMatches(
        grads[0],
        [&](const Doubles& x) {
          Tensor t = tensor(q.shape(), x);
          return attend(t, k, v, &mask, a);
        },
        q, upstream, what + "grad_query");
    expectGradientMatches(
        grads[1],
        [&](const Doubles& x) {
          Tensor t = tensor(k.shape(), x);
          return attend(q, t, v, &mask, a);
        },
        k, upstream, what + "grad_key");
    expectGradientMatches(
        grads[2],
        [&](const Doubles& x) {
          Tensor t = tensor(v.shape(), x);
          return attend(q, k, t, &mask, a);
        },
        v, upstream, what + "grad_value");
  }
}

} // namespace
} // namespace loupe::testing
