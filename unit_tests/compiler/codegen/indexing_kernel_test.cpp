// Advanced indexing's library kernels (aten.index.Tensor's gather, aten.index_put's write and
// add) against the reference: nearest-neighbour upsampling's indices (the innermost dims), rows
// (whole runs), indexed dims apart (the block in front), negative and i32 indices that broadcast,
// other dtypes, repeated indices added, values broadcast, and an index out of bounds.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compiler/codegen/cpu/library_kernels.h"
#include "compiler/ir/error.h"
#include "compiler/ir/parser.h"

#include "unit_tests/compiler/codegen/codegen_test_support.h"

namespace loupe::testing {
namespace {

Tensor indexTensor(const std::vector<double>& values, std::vector<int64_t> shape,
                   DType dtype = DType::I64) {
  return Tensor::fromDoubles(values, dtype, std::move(shape));
}

// Runs the graph's one node as the library kernel in check mode: the error against the
// reference, and the implementation the executable ran.
KernelStats runIndexing(const std::string& lir, const std::string& op,
                        const std::vector<Tensor>& inputs) {
  std::unique_ptr<Graph> graph = parseGraph(lir);
  std::optional<CpuLibraryKernel> kernel =
      findCpuLibraryKernel(*graph->outputs()[0]->definingNode(), nullptr);
  EXPECT_TRUE(kernel) << op;
  return runLibraryKernel(*graph, op, inputs);
}

TEST(IndexingLibraryKernel, NearestUpsamplingGathersTheInnermostDims) {
  std::vector<double> rows, columns;
  for (int i = 0; i < 8; ++i)
    rows.push_back(i / 2);
  for (int j = 0; j < 10; ++j)
    columns.push_back(j / 2);
  KernelStats stats = runIndexing(R"(
graph @up(%x: f32[2,3,4,5], %h: i64[8,1], %w: i64[10]) -> (f32[2,3,8,10]) {
  %y = aten.index.Tensor(%x, none, none, %h, %w) : f32[2,3,8,10]
  return %y
})",
                                  "aten.index.Tensor",
                                  {transposedRandom(DType::F32, {2, 3, 4, 5}, 1),
                                   indexTensor(rows, {8, 1}), indexTensor(columns, {10})});
  EXPECT_EQ(stats.implementation, "library:aten.index.Tensor");
  EXPECT_EQ(stats.maxAbsError, 0);
}

TEST(IndexingLibraryKernel, RowsWithNegativeIndicesAreWholeRuns) {
  KernelStats stats = runIndexing(
      R"(
graph @rows(%x: f32[6,4], %i: i64[7]) -> (f32[7,4]) {
  %y = aten.index.Tensor(%x, %i) : f32[7,4]
  return %y
})",
      "aten.index.Tensor",
      {transposedRandom(DType::F32, {6, 4}, 2), indexTensor({0, 5, -1, 2, 2, -6, 3}, {7})});
  EXPECT_EQ(stats.maxAbsError, 0);
}

TEST(IndexingLibraryKernel, IndexedDimsApartPutTheBlockInFront) {
  KernelStats stats = runIndexing(R"(
graph @apart(%x: f64[3,4,5,6], %i: i64[2], %j: i64[2]) -> (f64[2,3,5]) {
  %y = aten.index.Tensor(%x, none, %i, none, %j) : f64[2,3,5]
  return %y
})",
                                  "aten.index.Tensor",
                                  {transposedRandom(DType::F64, {3, 4, 5, 6}, 3),
                                   indexTensor({3, 0}, {2}), indexTensor({5, -2}, {2})});
  EXPECT_EQ(stats.maxAbsError, 0);
}

TEST(IndexingLibraryKernel, BroadcastI32IndicesInEveryDtype) {
  for (const char* dtype : {"bf16", "bool", "i64", "f16"}) {
    SCOPED_TRACE(dtype);
    std::string lir = std::string(R"(
graph @broadcast(%x: T[5,6], %i: i32[3,1], %j: i32[4]) -> (T[3,4]) {
  %y = aten.index.Tensor(%x, %i, %j) : T[3,4]
  return %y
})");
    for (size_t at = lir.find('T'); at != std::string::npos; at = lir.find('T', at + 1))
      if (lir[at + 1] == '[') lir.replace(at, 1, dtype);
    std::unique_ptr<Graph> parsed = parseGraph(lir);
    DType type = parsed->input(0)->tensorType().dtype;
    KernelStats stats =
        runIndexing(lir, "aten.index.Tensor",
                    {transposedRandom(type, {5, 6}, 4), indexTensor({4, 0, -3}, {3, 1}, DType::I32),
                     indexTensor({5, 1, 0, -1}, {4}, DType::I32)});
    EXPECT_EQ(stats.maxAbsError, 0);
  }
}

TEST(IndexingLibraryKernel, IndexPutAddsRepeatedIndicesAndWritesBroadcastValues) {
  KernelStats added =
      runIndexing(R"(
graph @add(%x: f32[5,4], %i: i64[6], %v: f32[6,4]) -> (f32[5,4]) {
  %y = aten.index_put(%x, %i, %v) {accumulate=true} : f32[5,4]
  return %y
})",
                  "aten.index_put",
                  {transposedRandom(DType::F32, {5, 4}, 5), indexTensor({1, 3, 1, -1, 1, 0}, {6}),
                   transposedRandom(DType::F32, {6, 4}, 6)});
  EXPECT_EQ(added.implementation, "library:aten.index_put");
  EXPECT_LT(added.maxAbsError, 1e-6);
  // Nearest upsampling's backward: the gradient added back through the upsampling's indices.
  std::vector<double> rows, columns;
  for (int i = 0; i < 6; ++i)
    rows.push_back(i / 2);
  for (int j = 0; j < 4; ++j)
    columns.push_back(j / 2);
  KernelStats upsampling =
      runIndexing(R"(
graph @up_backward(%x: f32[2,3,2], %h: i64[6,1], %w: i64[4], %g: f32[2,6,4]) -> (f32[2,3,2]) {
  %y = aten.index_put(%x, none, %h, %w, %g) {accumulate=true} : f32[2,3,2]
  return %y
})",
                  "aten.index_put",
                  {transposedRandom(DType::F32, {2, 3, 2}, 7), indexTensor(rows, {6, 1}),
                   indexTensor(columns, {4}), transposedRandom(DType::F32, {2, 6, 4}, 8)});
  EXPECT_LT(upsampling.maxAbsError, 1e-6);
  KernelStats written = runIndexing(
      R"(
graph @write(%x: i64[5,4], %i: i64[2], %v: i64[]) -> (i64[5,4]) {
  %y = aten.index_put(%x, %i, %v) {accumulate=false} : i64[5,4]
  return %y
})",
      "aten.index_put",
      {transposedRandom(DType::I64, {5, 4}, 9), indexTensor({4, 1}, {2}), indexTensor({7}, {})});
  EXPECT_EQ(written.maxAbsError, 0);
  // Both dims indexed: one element of self per index pair (the kernel's loop over the block).
  KernelStats pairs = runIndexing(
      R"(
graph @pairs(%x: i64[5,4], %i: i64[3], %j: i64[3], %v: i64[3]) -> (i64[5,4]) {
  %y = aten.index_put(%x, %i, %j, %v) {accumulate=false} : i64[5,4]
  return %y
})",
      "aten.index_put",
      {transposedRandom(DType::I64, {5, 4}, 10), indexTensor({4, 0, -2}, {3}),
       indexTensor({1, 3, 0}, {3}), randomTensor(DType::I64, {3}, 11)});
  EXPECT_EQ(pairs.maxAbsError, 0);
}

TEST(IndexingLibraryKernel, AnIndexOutOfBoundsIsARuntimeErrorNamingIt) {
  std::unique_ptr<Graph> graph = parseGraph(R"(
graph @oob(%x: f32[6,4], %i: i64[2]) -> (f32[2,4]) {
  %y = aten.index.Tensor(%x, %i) : f32[2,4]
  return %y
})");
  std::unique_ptr<Executable> executable = libraryExecutable(*graph, "aten.index.Tensor");
  try {
    executable->run({transposedRandom(DType::F32, {6, 4}, 1), indexTensor({2, 6}, {2})});
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(error.message().find("index 6 is out of bounds for dim 0 of size 6"),
              std::string::npos)
        << error.message();
  }
}

} // namespace
} // namespace loupe::testing
