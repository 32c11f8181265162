// Library kernels on bf16 and f16 tensors (library/reduced_float.h): the f32 kernel on widened
// copies, the results rounded back, against the float64 reference; and the vector conversions
// against the scalar ones, bit for bit.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "compiler/codegen/cpu/library/reduced_float.h"
#include "compiler/codegen/cpu/library_kernels.h"

#include "unit_tests/compiler/codegen/codegen_test_support.h"

namespace loupe::testing {
namespace {

float fromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

TEST(ReducedFloatConversions, NarrowingToBfloat16RoundsAsTheScalarConversion) {
  std::vector<float> values = {0.0f,
                               -0.0f,
                               1.0f,
                               -2.5f,
                               3.4e38f,
                               -3.4e38f,
                               1e-40f,
                               -1e-45f,
                               fromBits(0x3f808000), // 1 + 2^-8: a tie, to even (down)
                               fromBits(0x3f818000), // a tie, to even (up)
                               fromBits(0x3f807fff),
                               fromBits(0x3f808001),
                               fromBits(0x7f7fffff),
                               fromBits(0x7f800000),
                               fromBits(0xff800000),
                               fromBits(0x7fc00000),
                               fromBits(0x7f800001),
                               fromBits(0xffffffff)};
  std::mt19937 bits(7);
  for (int i = 0; i < 100000; ++i)
    values.push_back(fromBits(static_cast<uint32_t>(bits())));
  std::vector<uint16_t> narrowed(values.size());
  library::narrowToBfloat16(values.data(), narrowed.data(), static_cast<int64_t>(values.size()));
  for (size_t i = 0; i < values.size(); ++i) {
    uint32_t raw;
    std::memcpy(&raw, &values[i], sizeof raw);
    ASSERT_EQ(narrowed[i], floatToBfloat16(values[i])) << std::hex << "0x" << raw;
  }
}

TEST(ReducedFloatConversions, WideningBfloat16IsExactForEveryValue) {
  std::vector<uint16_t> all(65536);
  for (size_t i = 0; i < all.size(); ++i)
    all[i] = static_cast<uint16_t>(i);
  std::vector<float> wide(all.size());
  library::widenBfloat16(all.data(), wide.data(), static_cast<int64_t>(all.size()));
  for (size_t i = 0; i < all.size(); ++i) {
    float expected = bfloat16ToFloat(all[i]);
    ASSERT_EQ(std::memcmp(&wide[i], &expected, sizeof expected), 0) << i;
  }
}

// A bf16 or f16 op on its library kernel: the implementation says so and the results are within
// a rounding or two of the dtype of the float64 reference's, rounded to it.
class ReducedFloatLibraryKernel : public ::testing::TestWithParam<DType> {
protected:
  DType dtype() const { return GetParam(); }
  // Results up to about 16 in magnitude: a bf16 step there is 1/16, an f16 step 1/128.
  double tolerance() const { return dtype() == DType::BF16 ? 0.13 : 0.016; }

  // bf16 products run on oneDNN's bf16 matmul where this machine has it; everything else through
  // f32.
  void expectLibrary(Graph& graph, const std::string& op, const std::vector<Tensor>& inputs) {
    std::string whyNot;
    ASSERT_TRUE(hasCpuLibraryKernel(*graph.nodes().front(), &whyNot)) << whyNot;
    std::optional<CpuLibraryKernel> kernel = findCpuLibraryKernel(*graph.nodes().front(), nullptr);
    bool product = op == "aten.mm" || op == "aten.bmm" || op == "aten.addmm";
    if (product && dtype() == DType::BF16 && cpuLibraryHasBf16Matmul())
      EXPECT_EQ(kernel->implementation, "onednn:matmul:bf16");
    else
      EXPECT_TRUE(kernel->implementation.ends_with(" via f32")) << kernel->implementation;
    KernelStats stats = runLibraryKernel(graph, op, inputs);
    EXPECT_EQ(stats.implementation, "library:" + op);
    EXPECT_LT(stats.maxAbsError, tolerance()) << op;
  }
};

TEST_P(ReducedFloatLibraryKernel, MatmulsReadTransposedOperandsInPlace) {
  // A transposed weight (the dense-in-another-order copy keeps its strides) and a row-major one.
  std::vector<Tensor> mm = {randomTensor(dtype(), {33, 24}, 1),
                            transposedRandom(dtype(), {24, 40}, 2)};
  auto product = singleOp("aten.mm", typesOf(mm), AttrMap());
  expectLibrary(*product, "aten.mm", mm);
  std::vector<Tensor> bmm = {permutedRandom(dtype(), {3, 17, 24}, {1, 2, 0}, 3),
                             transposedRandom(dtype(), {3, 24, 9}, 4)};
  auto batched = singleOp("aten.bmm", typesOf(bmm), AttrMap());
  expectLibrary(*batched, "aten.bmm", bmm);
  AttrMap scaled;
  scaled.set("beta", 1.0);
  scaled.set("alpha", 1.0);
  std::vector<Tensor> addmm = {randomTensor(dtype(), {40}, 5), randomTensor(dtype(), {33, 24}, 6),
                               transposedRandom(dtype(), {24, 40}, 7)};
  auto biased = singleOp("aten.addmm", typesOf(addmm), scaled);
  expectLibrary(*biased, "aten.addmm", addmm);
  // A bias of the result's shape, and one row (a batch-1 linear).
  std::vector<Tensor> full = {randomTensor(dtype(), {33, 40}, 8),
                              randomTensor(dtype(), {33, 24}, 9),
                              transposedRandom(dtype(), {24, 40}, 10)};
  expectLibrary(*singleOp("aten.addmm", typesOf(full), scaled), "aten.addmm", full);
  std::vector<Tensor> row = {randomTensor(dtype(), {40}, 11), randomTensor(dtype(), {1, 24}, 12),
                             transposedRandom(dtype(), {24, 40}, 13)};
  expectLibrary(*singleOp("aten.addmm", typesOf(row), scaled), "aten.addmm", row);
}

TEST_P(ReducedFloatLibraryKernel, ConvolutionAndMaxPoolingWithIndices) {
  AttrMap window;
  window.set("stride", IntList{SymExpr(1)});
  window.set("padding", IntList{SymExpr(1)});
  window.set("dilation", IntList{SymExpr(1)});
  window.set("transposed", false);
  window.set("output_padding", IntList{SymExpr(0)});
  window.set("groups", SymExpr(1));
  std::vector<Tensor> conv = {randomTensor(dtype(), {2, 3, 9, 8}, 8),
                              randomTensor(dtype(), {4, 3, 3, 3}, 9),
                              randomTensor(dtype(), {4}, 10)};
  auto convolution = singleOp("aten.convolution", typesOf(conv), window);
  expectLibrary(*convolution, "aten.convolution", conv);

  AttrMap pool;
  pool.set("kernel_size", IntList{SymExpr(3)});
  pool.set("stride", IntList{SymExpr(2)});
  pool.set("padding", IntList{SymExpr(1)});
  pool.set("dilation", IntList{SymExpr(1)});
  pool.set("ceil_mode", false);
  std::vector<Tensor> x = {randomTensor(dtype(), {2, 3, 9, 8}, 11)};
  auto pooling = singleOp("aten.max_pool2d_with_indices", typesOf(x), pool);
  expectLibrary(*pooling, "aten.max_pool2d_with_indices", x);
}

INSTANTIATE_TEST_SUITE_P(DTypes, ReducedFloatLibraryKernel,
                         ::testing::Values(DType::BF16, DType::F16),
                         [](const auto& info) { return std::string(dtypeName(info.param)); });

} // namespace
} // namespace loupe::testing
