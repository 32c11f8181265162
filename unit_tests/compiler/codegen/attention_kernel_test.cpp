// The scaled dot-product attention library kernels (forward and backward in one graph, so the
// backward reads the forward's out and logsumexp) against the double-precision references, in
// check mode: both dtypes, sequences shorter and longer than a block, causal and additive masks,
// grouped-query heads, query/key/value as transposed views of [batch, seq, heads, head_dim].
#include <gtest/gtest.h>

#include <limits>
#include <optional>
#include <string>

#include "unit_tests/compiler/codegen/codegen_test_support.h"

namespace loupe::testing {
namespace {

constexpr const char* kForward = "aten._scaled_dot_product_flash_attention_for_cpu";
constexpr const char* kBackward = "aten._scaled_dot_product_flash_attention_for_cpu_backward";

enum class Mask { None, Full, PerKey, MasksFirstKey };

struct AttentionCase {
  std::string name;
  DType dtype;
  int64_t batch, heads, kvHeads, queries, keys, headDim;
  bool causal;
  Mask mask;
  std::optional<double> scale;
};

std::vector<int64_t> shapeOf(const Shape& shape) {
  std::vector<int64_t> sizes;
  for (const SymExpr& d : shape)
    sizes.push_back(*d.constant());
  return sizes;
}

// [batch, heads, seq, head_dim] stored as [batch, seq, heads, head_dim], as a model's
// projections produce it.
Tensor headsView(DType dtype, std::vector<int64_t> shape, unsigned seed) {
  return permutedRandom(dtype, shape, {0, 2, 1, 3}, seed);
}

// The additive mask's shape, and its values: random, or -inf on key 0 so that with causal
// masking the first query row has no visible key at all.
std::optional<Tensor> maskFor(const AttentionCase& form) {
  switch (form.mask) {
  case Mask::None:
    return std::nullopt;
  case Mask::Full:
    return randomTensor(form.dtype, {form.batch, form.heads, form.queries, form.keys}, 9);
  case Mask::PerKey:
    return randomTensor(form.dtype, {form.batch, 1, 1, form.keys}, 9);
  case Mask::MasksFirstKey: {
    Tensor mask = Tensor::zeros(form.dtype, {form.keys});
    mask.set(0, -std::numeric_limits<double>::infinity());
    return mask;
  }
  }
  return std::nullopt;
}

class AttentionKernel : public ::testing::TestWithParam<AttentionCase> {};

TEST_P(AttentionKernel, ForwardAndBackwardMatchTheReference) {
  const AttentionCase& form = GetParam();
  std::vector<Tensor> inputs = {
      headsView(form.dtype, {form.batch, form.heads, form.queries, form.headDim}, 1),
      headsView(form.dtype, {form.batch, form.kvHeads, form.keys, form.headDim}, 2),
      headsView(form.dtype, {form.batch, form.kvHeads, form.keys, form.headDim}, 3)};
  if (std::optional<Tensor> mask = maskFor(form)) inputs.push_back(*mask);
  AttrMap attrs;
  attrs.set("dropout_p", 0.0);
  attrs.set("is_causal", form.causal);
  if (form.scale) attrs.set("scale", *form.scale);

  Graph graph("attention");
  std::vector<Value*> operands;
  for (const TensorType& type : typesOf(inputs))
    operands.push_back(graph.addInput(type, "in" + std::to_string(operands.size())));
  Value* mask = operands.size() > 3 ? operands[3] : nullptr;
  GraphBuilder builder(graph, nullptr);
  std::vector<Value*> forward =
      builder.opResults(kForward, {operands[0], operands[1], operands[2], mask}, attrs);
  Value* gradOut = graph.addInput(forward[0]->type(), "grad_out");
  inputs.push_back(transposedRandom(form.dtype, shapeOf(forward[0]->tensorType().shape), 4));
  std::vector<Value*> grads = builder.opResults(
      kBackward, {gradOut, operands[0], operands[1], operands[2], forward[0], forward[1], mask},
      attrs);
  graph.setOutputs({forward[0], forward[1], grads[0], grads[1], grads[2]});

  KernelStats stats = runLibraryKernel(graph, kForward, inputs);
  EXPECT_EQ(stats.calls, 2);
  EXPECT_LT(stats.maxAbsError, form.dtype == DType::F32 ? 1e-4 : 1e-12);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, AttentionKernel,
    ::testing::Values(
        AttentionCase{"short_f32", DType::F32, 2, 3, 3, 13, 13, 8, false, Mask::None, {}},
        AttentionCase{"short_f64", DType::F64, 2, 3, 3, 13, 13, 8, false, Mask::None, {}},
        AttentionCase{"causal_blocks_f32", DType::F32, 1, 2, 2, 150, 150, 16, true, Mask::None, {}},
        AttentionCase{"causal_cross_f64", DType::F64, 1, 2, 2, 70, 45, 5, true, Mask::Full, {}},
        AttentionCase{"grouped_per_key_mask_f32", DType::F32, 2, 4, 2, 67, 67, 8, false,
                      Mask::PerKey, 0.3},
        // Three head groups of three heads each: the threads split the groups unevenly.
        AttentionCase{"grouped_causal_uneven_split_f64",
                      DType::F64,
                      3,
                      3,
                      1,
                      40,
                      40,
                      8,
                      true,
                      Mask::None,
                      {}},
        AttentionCase{
            "fully_masked_row_f64", DType::F64, 1, 2, 1, 9, 9, 4, true, Mask::MasksFirstKey, {}},
        // f32's own exp (library/softmax_row.h) at a -inf score, and on a row with no key.
        AttentionCase{
            "fully_masked_row_f32", DType::F32, 1, 2, 1, 9, 9, 4, true, Mask::MasksFirstKey, {}}),
    [](const auto& info) { return info.param.name; });

} // namespace
} // namespace loupe::testing
