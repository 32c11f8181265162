// Factory ops: dtype inferred from the fill value or arguments, symbolic sizes and arange
// lengths, *_like forms following their operand.
#include "compiler/ir/error.h"
#include "unit_tests/compiler/ops/elementwise/op_test_support.h"

namespace loupe::testing {
namespace {

const SymExpr s0 = SymExpr::symbol("s0");

TEST(Factory, FullInfersDTypeFromFillValue) {
  IntList size = {s0, 3};
  EXPECT_EQ(inferOne("aten.full", {}, attrs({{"size", size}, {"fill_value", true}})).tensor().dtype,
            DType::Bool);
  EXPECT_EQ(
      inferOne("aten.full", {}, attrs({{"size", size}, {"fill_value", SymExpr(2)}})).tensor().dtype,
      DType::I64);
  Type f = inferOne("aten.full", {}, attrs({{"size", size}, {"fill_value", 2.5}}));
  EXPECT_EQ(f.tensor().dtype, DType::F32);
  EXPECT_EQ(f.tensor().shape, (Shape{s0, 3}));
  EXPECT_EQ(
      inferOne("aten.full", {}, attrs({{"size", size}, {"fill_value", 2.5}, {"dtype", DType::F16}}))
          .tensor()
          .dtype,
      DType::F16);
  expectValues(runOne("aten.full", {}, attrs({{"size", IntList{2, 2}}, {"fill_value", 2.5}})),
               {2.5, 2.5, 2.5, 2.5});
}

// One value everywhere is converted once and its bytes copied (Tensor::fill): every dtype,
// sizes that are not a power of two, each element the value set one at a time would hold.
TEST(Factory, FullWritesTheValueInEveryDtypeAndSize) {
  for (DType dtype : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I8, DType::I16,
                      DType::I32, DType::I64, DType::U8, DType::Bool})
    for (int64_t size : {int64_t(1), int64_t(7), int64_t(1000), int64_t(4099)}) {
      SCOPED_TRACE(std::string(dtypeName(dtype)) + " " + std::to_string(size));
      Tensor out = runOne("aten.full", {},
                          attrs({{"size", IntList{size}}, {"fill_value", 3.0}, {"dtype", dtype}}));
      Tensor one = Tensor::empty(dtype, {1});
      one.set(0, 3.0);
      expectValues(out, std::vector<double>(static_cast<size_t>(size), one.at(0)));
    }
}

TEST(Factory, ZerosOnesEmptyAndDevice) {
  AttrMap a = attrs({{"size", IntList{2, 3}}});
  Tensor z = runOne("aten.zeros", {}, a);
  EXPECT_EQ(z.dtype(), DType::F32);
  expectValues(z, std::vector<double>(6, 0));
  expectValues(runOne("aten.ones", {}, a), std::vector<double>(6, 1));
  expectValues(runOne("aten.empty.memory_format", {}, a), std::vector<double>(6, 0));
  a.set("device", std::string("cuda:1"));
  Type t = inferOne("aten.zeros", {}, a);
  EXPECT_EQ(t.tensor().device, (Device{Device::Kind::CUDA, 1}));
  a.set("device", std::string("tpu"));
  EXPECT_THROW(inferOne("aten.zeros", {}, a), Error);
}

TEST(Factory, LikeFormsFollowTheirOperand) {
  Tensor x = values({1, 2, 3, 4, 5, 6}, DType::I32, {2, 3});
  Tensor f = runOne("aten.full_like", {x}, attrs({{"fill_value", 7.0}}));
  EXPECT_EQ(f.dtype(), DType::I32);
  EXPECT_EQ(f.shape(), x.shape());
  expectValues(f, std::vector<double>(6, 7));
  Tensor z = runOne("aten.zeros_like", {x}, attrs({{"dtype", DType::F64}}));
  EXPECT_EQ(z.dtype(), DType::F64);
  expectValues(z, std::vector<double>(6, 0));
  expectValues(runOne("aten.ones_like", {x}), std::vector<double>(6, 1));
  Tensor e = runOne("aten.empty_like", {x});
  EXPECT_EQ(e.dtype(), DType::I32);
  EXPECT_EQ(e.shape(), x.shape());
  expectValues(e, std::vector<double>(6, 0));
  Tensor strided = runOne("aten.new_empty_strided", {x},
                          attrs({{"size", IntList{3, 2}}, {"stride", IntList{1, 3}}}));
  EXPECT_EQ(strided.dtype(), DType::I32);
  EXPECT_EQ(strided.shape(), (std::vector<int64_t>{3, 2}));
  expectValues(strided, std::vector<double>(6, 0));
  EXPECT_EQ(inferOne("aten.new_empty_strided", {tensorType(DType::F16, {s0, 4})},
                     attrs({{"size", IntList{s0, 2}}, {"stride", IntList{2, 1}}}))
                .tensor()
                .shape,
            (Shape{s0, 2}));
  expectValues(runOne("aten.fill.Scalar", {x}, attrs({{"value", SymExpr(-2)}})),
               std::vector<double>(6, -2));
  EXPECT_EQ(inferOne("aten.ones_like", {tensorType(DType::F16, {s0, 4})}).tensor().shape,
            (Shape{s0, 4}));
}

TEST(Factory, ArangeLengthsAndDTypes) {
  Tensor a = runOne("aten.arange", {}, attrs({{"end", SymExpr(5)}}));
  EXPECT_EQ(a.dtype(), DType::I64);
  expectValues(a, {0, 1, 2, 3, 4});
  expectValues(runOne("aten.arange.start_step", {},
                      attrs({{"start", SymExpr(1)}, {"end", SymExpr(10)}, {"step", SymExpr(3)}})),
               {1, 4, 7});
  expectValues(runOne("aten.arange.start_step", {},
                      attrs({{"start", SymExpr(10)}, {"end", SymExpr(0)}, {"step", SymExpr(-3)}})),
               {10, 7, 4, 1});
  Tensor f = runOne("aten.arange.start_step", {},
                    attrs({{"start", 0.0}, {"end", SymExpr(1)}, {"step", 0.25}}));
  EXPECT_EQ(f.dtype(), DType::F32);
  expectValues(f, {0, 0.25, 0.5, 0.75});
  expectValues(
      runOne("aten.arange.start", {}, attrs({{"start", SymExpr(-2)}, {"end", SymExpr(1)}})),
      {-2, -1, 0});
  EXPECT_EQ(inferOne("aten.arange", {}, attrs({{"end", s0}})).tensor().shape, (Shape{s0}));
  EXPECT_EQ(
      inferOne("aten.arange.start", {}, attrs({{"start", SymExpr(2)}, {"end", s0}})).tensor().shape,
      (Shape{s0 - 2}));
  EXPECT_EQ(inferOne("aten.arange.start_step", {},
                     attrs({{"start", SymExpr(0)}, {"end", s0}, {"step", SymExpr(2)}}))
                .tensor()
                .shape,
            (Shape{SymExpr::floorDiv(s0 + 1, 2)}));
  EXPECT_THROW(inferOne("aten.arange.start_step", {},
                        attrs({{"start", SymExpr(0)}, {"end", SymExpr(5)}, {"step", SymExpr(-1)}})),
               Error);
  EXPECT_THROW(inferOne("aten.arange.start_step", {},
                        attrs({{"start", SymExpr(0)}, {"end", SymExpr(5)}, {"step", SymExpr(0)}})),
               Error);
}

TEST(Factory, ScalarTensor) {
  Tensor t = runOne("aten.scalar_tensor", {}, attrs({{"s", 1.5}}));
  EXPECT_EQ(t.dtype(), DType::F32);
  EXPECT_EQ(t.rank(), 0u);
  expectValues(t, {1.5});
  EXPECT_EQ(inferOne("aten.scalar_tensor", {}, attrs({{"s", SymExpr(3)}, {"dtype", DType::I64}}))
                .tensor()
                .dtype,
            DType::I64);
}

} // namespace
} // namespace loupe::testing
