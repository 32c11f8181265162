// planCudaLaunch: which entry it picks for which tensors, the grid and block, and the parameter
// block it packs. The tensors borrow made-up device addresses: planning never reads elements.
#include <gtest/gtest.h>

#include <algorithm>

#include "compiler/codegen/cuda/cuda_codegen.h"
#include "compiler/codegen/cuda/cuda_kernel_abi.h"
#include "compiler/ir/error.h"
#include "compiler/ir/parser.h"
#include "unit_tests/compiler/codegen/cuda/fused_graph.h"

namespace loupe {
namespace {

constexpr uintptr_t kDevice = 0x7f0000000000; // 16-byte aligned

Tensor deviceTensor(uintptr_t address, DType dtype, std::vector<int64_t> shape,
                    std::vector<int64_t> strides = {}) {
  return Tensor::borrow(reinterpret_cast<void*>(address), dtype, std::move(shape),
                        std::move(strides));
}

struct Kernel {
  std::unique_ptr<Graph> graph;
  CudaKernelLayout layout;
  GeneratedCudaKernel generated;
  explicit Kernel(const std::string& text)
      : graph(parseGraph(text)), layout(describeCudaKernel(*graph->nodes().front())),
        generated(generateCudaKernel(*graph->nodes().front(), "k")) {}
  CudaLaunch plan(std::vector<int64_t> sizes, const std::vector<const Tensor*>& inputs,
                  Tensor& output) const {
    return planCudaLaunch(layout, KernelBinding{std::move(sizes), {}}, inputs, {&output}, 132);
  }
  const std::string& entry(const CudaLaunch& launch) const {
    return generated.entries.at(launch.entry);
  }
};

const char* kBiasAdd = R"(
graph @g(%x: f32[4,8], %b: f32[8]) -> (f32[4,8]) {
  %y = aten.add.Tensor(%x, %b) {alpha=1} : f32[4,8]
  return %y
})";

TEST(CudaLaunch, ContiguousAlignedOperandsTakeTheVectorisedEntry) {
  Kernel kernel(kBiasAdd);
  Tensor x = deviceTensor(kDevice, DType::F32, {4, 8});
  Tensor b = deviceTensor(kDevice + 4096, DType::F32, {8}); // broadcast along whole rows
  Tensor y = deviceTensor(kDevice + 8192, DType::F32, {4, 8});
  CudaLaunch launch = kernel.plan({4, 8}, {&x, &b}, y);
  EXPECT_EQ(kernel.entry(launch), "loupe_k_vec") << launch.why;
  // sizes, data, strides (x, b, y), scalars
  std::vector<int64_t> expected{4,
                                8,
                                static_cast<int64_t>(kDevice),
                                static_cast<int64_t>(kDevice + 4096),
                                static_cast<int64_t>(kDevice + 8192),
                                8,
                                1,
                                0,
                                1,
                                8,
                                1,
                                0};
  EXPECT_EQ(launch.args, expected);
  EXPECT_EQ(launch.block[0], 256u);
  EXPECT_EQ(launch.grid[0], 1u);
}

// A large pointwise kernel gets a vector a thread up to 128 blocks per multiprocessor, then a
// grid-stride loop over that many (kPointwiseBlocksPerMultiprocessor says why); a small one gets
// the blocks its vectors need.
TEST(CudaLaunch, PointwiseGridsCoverAVectorAThreadUpTo128BlocksPerMultiprocessor) {
  Kernel kernel(kBiasAdd);
  auto gridFor = [&](int64_t rows) {
    Tensor x = deviceTensor(kDevice, DType::F32, {rows, 8});
    Tensor b = deviceTensor(kDevice, DType::F32, {8});
    Tensor y = deviceTensor(kDevice, DType::F32, {rows, 8});
    CudaLaunch launch = kernel.plan({rows, 8}, {&x, &b}, y);
    EXPECT_EQ(kernel.entry(launch), "loupe_k_vec") << launch.why;
    return launch.grid[0];
  };
  EXPECT_EQ(gridFor(1024), 8u);                 // 2048 vectors of 4 floats, 256 a block
  EXPECT_EQ(gridFor(int64_t{1} << 21), 16384u); // 4M vectors: one each
  EXPECT_EQ(gridFor(int64_t{1} << 23), 128u * 132u);
}

TEST(CudaLaunch, TransposedBroadcastWithinRowsOrMisalignedOperandsTakeTheStridedEntry) {
  Kernel kernel(kBiasAdd);
  Tensor b = deviceTensor(kDevice + 4096, DType::F32, {8});
  Tensor y = deviceTensor(kDevice + 8192, DType::F32, {4, 8});
  Tensor transposed = deviceTensor(kDevice, DType::F32, {4, 8}, {1, 4});
  CudaLaunch launch = kernel.plan({4, 8}, {&transposed, &b}, y);
  EXPECT_EQ(kernel.entry(launch), "loupe_k_narrow"); // every offset fits 31 bits
  EXPECT_EQ(launch.args[5], 1);                      // x's strides in the iteration space
  EXPECT_EQ(launch.args[6], 4);

  Tensor x = deviceTensor(kDevice, DType::F32, {4, 8});
  Tensor misaligned = deviceTensor(kDevice, DType::F32, {64}).view({4, 8}, {8, 1}, 1);
  EXPECT_EQ(kernel.entry(kernel.plan({4, 8}, {&misaligned, &b}, y)), "loupe_k_narrow");
  EXPECT_EQ(kernel.plan({4, 8}, {&misaligned, &b}, y).args[2], static_cast<int64_t>(kDevice + 4));

  // A bias of 6 elements repeated: a vector of 4 would straddle two rows.
  Kernel six(R"(
graph @g(%x: f32[4,6], %b: f32[6]) -> (f32[4,6]) {
  %y = aten.add.Tensor(%x, %b) {alpha=1} : f32[4,6]
  return %y
})");
  Tensor x6 = deviceTensor(kDevice, DType::F32, {4, 6});
  Tensor b6 = deviceTensor(kDevice + 4096, DType::F32, {6});
  Tensor y6 = deviceTensor(kDevice + 8192, DType::F32, {4, 6});
  EXPECT_EQ(six.entry(six.plan({4, 6}, {&x6, &b6}, y6)), "loupe_k_narrow");
  // Dense operands may end in a partial vector: the tail.
  Tensor s = deviceTensor(kDevice + 4096, DType::F32, {});
  Kernel scalar(R"(
graph @g(%x: f32[5,3], %s: f32[]) -> (f32[5,3]) {
  %y = aten.mul.Tensor(%x, %s) : f32[5,3]
  return %y
})");
  Tensor x53 = deviceTensor(kDevice, DType::F32, {5, 3});
  Tensor y53 = deviceTensor(kDevice + 8192, DType::F32, {5, 3});
  EXPECT_EQ(scalar.entry(scalar.plan({5, 3}, {&x53, &s}, y53)), "loupe_k_vec");
  // An input broadcast down a column is not.
  Kernel column(R"(
graph @g(%x: f32[4,8], %c: f32[4,1]) -> (f32[4,8]) {
  %y = aten.mul.Tensor(%x, %c) : f32[4,8]
  return %y
})");
  Tensor c = deviceTensor(kDevice + 4096, DType::F32, {4, 1});
  EXPECT_EQ(column.entry(column.plan({4, 8}, {&x, &c}, y)), "loupe_k_narrow");
}

// The narrow strided entry only where every offset it computes is a non-negative int32: else
// the 64-bit one (a negative stride; an operand reaching 2^31 elements; 2^31 elements).
TEST(CudaLaunch, TheNarrowStridedEntryOnlyWhereEveryOffsetFits31Bits) {
  Kernel kernel(kBiasAdd);
  Tensor b = deviceTensor(kDevice + 4096, DType::F32, {8});
  Tensor y = deviceTensor(kDevice + 8192, DType::F32, {4, 8});
  Tensor flipped = deviceTensor(kDevice + 96, DType::F32, {4, 8}, {-8, 1});
  CudaLaunch launch = kernel.plan({4, 8}, {&flipped, &b}, y);
  EXPECT_EQ(kernel.entry(launch), "loupe_k") << launch.why;
  // Rows 715827881 elements apart: the last element is 3 * 715827881 + 7 = 2^31 + 2 from the first.
  Tensor far = deviceTensor(kDevice, DType::F32, {4, 8}, {715827881, 1});
  EXPECT_EQ(kernel.entry(kernel.plan({4, 8}, {&far, &b}, y)), "loupe_k");
  Tensor near = deviceTensor(kDevice, DType::F32, {4, 8}, {715827880, 1}); // 2^31 - 1
  EXPECT_EQ(kernel.entry(kernel.plan({4, 8}, {&near, &b}, y)), "loupe_k_narrow");
  // 2^31 elements (zero strides down the rows: the plan reads no data).
  int64_t rows = int64_t{1} << 28;
  Tensor wide = deviceTensor(kDevice, DType::F32, {rows, 8}, {0, 1});
  Tensor bias = deviceTensor(kDevice + 4096, DType::F32, {8});
  Tensor out = deviceTensor(kDevice + 8192, DType::F32, {rows, 8}, {0, 1});
  EXPECT_EQ(kernel.entry(kernel.plan({rows, 8}, {&wide, &bias}, out)), "loupe_k");
}

TEST(CudaLaunch, AWrongSizeIsRefusedNamingTheOperand) {
  Kernel kernel(kBiasAdd);
  Tensor x = deviceTensor(kDevice, DType::F32, {4, 9});
  Tensor b = deviceTensor(kDevice + 4096, DType::F32, {8});
  Tensor y = deviceTensor(kDevice + 8192, DType::F32, {4, 8});
  try {
    kernel.plan({4, 8}, {&x, &b}, y);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), "runtime");
    EXPECT_NE(error.message().find("input 0"), std::string::npos) << error.message();
  }
}

TEST(CudaLaunch, ReductionsTakeTheRowEntryForContiguousRowsAtLeastAWarpLong) {
  Kernel kernel(R"(
graph @g(%x: f32[s0,s1]) -> (f32[s0]) {
  %s = aten.sum.dim_IntList(%x) {dim=[1], keepdim=false} : f32[s0]
  return %s
})");
  auto plan = [&](int64_t rows, int64_t columns, std::vector<int64_t> strides) {
    Tensor x = deviceTensor(kDevice, DType::F32, {rows, columns}, std::move(strides));
    Tensor s = deviceTensor(kDevice + (1 << 24), DType::F32, {rows});
    return kernel.plan({rows, columns}, {&x}, s);
  };
  CudaLaunch warp = plan(2000, 768, {});
  EXPECT_EQ(kernel.entry(warp), "loupe_k_rowvec") << warp.why; // dense, aligned rows
  EXPECT_EQ(warp.block[0], 32u);
  EXPECT_EQ(warp.block[1], 8u);
  EXPECT_EQ(warp.grid[0], 250u);
  // Fewer rows than 8 per multiprocessor (132 here): a block each, on 64 multiprocessors
  // rather than a warp each on 8.
  CudaLaunch few = plan(64, 1024, {});
  EXPECT_EQ(kernel.entry(few), "loupe_k_rowvec") << few.why;
  EXPECT_EQ(few.block[0], 256u);
  EXPECT_EQ(few.block[1], 1u);
  EXPECT_EQ(few.grid[0], 64u);
  // Rows 770 elements apart start off a 16-byte boundary every other row: the scalar row entry.
  EXPECT_EQ(kernel.entry(plan(1000, 768, {770, 1})), "loupe_k_row");
  // A row length that is no multiple of the vector: the scalar row entry.
  EXPECT_EQ(kernel.entry(plan(1000, 767, {})), "loupe_k_row");
  CudaLaunch block = plan(2, 100000, {});
  EXPECT_EQ(kernel.entry(block), "loupe_k_rowvec");
  EXPECT_EQ(block.block[0], 512u);
  EXPECT_EQ(block.block[1], 1u);
  EXPECT_EQ(block.grid[0], 2u);
  CudaLaunch transposed = plan(1000, 768, {1, 1000});
  EXPECT_EQ(kernel.entry(transposed), "loupe_k") << transposed.why;
  EXPECT_EQ(transposed.block[0], 256u);
  EXPECT_EQ(transposed.grid[0], 4u);
  EXPECT_EQ(kernel.entry(plan(1000, 16, {})), "loupe_k");
}

const char* kSymbolicSum = R"(
graph @g(%x: f32[s0,s1]) -> (f32[s0]) {
  %s = aten.sum.dim_IntList(%x) {dim=[1], keepdim=false} : f32[s0]
  return %s
})";

TEST(CudaLaunch, FewLongRowsTakeTheSplitEntryWithAWorkspace) {
  Kernel kernel(kSymbolicSum);
  ASSERT_EQ(kernel.layout.entries.back(), CudaEntryRole::ReductionSplit);
  auto plan = [&](int64_t rows, int64_t columns) {
    Tensor x = deviceTensor(kDevice, DType::F32, {rows, columns});
    Tensor s = deviceTensor(kDevice + (int64_t{1} << 36), DType::F32, {rows});
    return kernel.plan({rows, columns}, {&x}, s);
  };
  // One row of 2^24 (x.sum()): 132 SMs hold 4 blocks of 512 threads each, 528 splits.
  CudaLaunch whole = plan(1, 1 << 24);
  EXPECT_EQ(kernel.entry(whole), "loupe_k_split") << whole.why;
  EXPECT_EQ(whole.block[0], 512u);
  EXPECT_EQ(whole.block[1], 1u);
  EXPECT_EQ(whole.grid[0], 1u);
  EXPECT_EQ(whole.grid[1], 528u);
  EXPECT_EQ(whole.workspaceBytes, size_t(kSplitPartialsOffset + 1 * 528 * 8));
  EXPECT_NE(std::string(whole.why).find("split"), std::string::npos);
  // Four rows of 2^22: 132 splits each.
  CudaLaunch four = plan(4, 1 << 22);
  EXPECT_EQ(kernel.entry(four), "loupe_k_split");
  EXPECT_EQ(four.grid[0], 4u);
  EXPECT_EQ(four.grid[1], 132u);
  EXPECT_EQ(four.workspaceBytes, size_t(kSplitPartialsOffset + 4 * 132 * 8));
  // Chunks stay at least 4096 elements: a row of 2^17 + 3 splits 32 ways, not 528.
  CudaLaunch shortish = plan(1, (1 << 17) + 3);
  EXPECT_EQ(kernel.entry(shortish), "loupe_k_split");
  EXPECT_EQ(shortish.grid[1], 32u);

  // The workspace word is the last of the block, zero until bound.
  EXPECT_EQ(whole.args.size(), kernel.layout.argWords());
  EXPECT_EQ(whole.args.back(), 0);
  bindCudaWorkspace(whole, reinterpret_cast<void*>(kDevice + 64));
  EXPECT_EQ(whole.args.back(), static_cast<int64_t>(kDevice + 64));
  EXPECT_THROW(bindCudaWorkspace(whole, nullptr), Error);
}

TEST(CudaLaunch, ManyOrShortRowsKeepTheRowAndPerOutputEntries) {
  Kernel kernel(kSymbolicSum);
  auto plan = [&](int64_t rows, int64_t columns) {
    Tensor x = deviceTensor(kDevice, DType::F32, {rows, columns});
    Tensor s = deviceTensor(kDevice + (int64_t{1} << 36), DType::F32, {rows});
    return kernel.plan({rows, columns}, {&x}, s);
  };
  // 512 rows of 2^18 fill the 528 block slots on their own.
  CudaLaunch many = plan(512, 1 << 18);
  EXPECT_EQ(kernel.entry(many), "loupe_k_rowvec") << many.why;
  EXPECT_EQ(many.grid[1], 1u);
  EXPECT_EQ(many.workspaceBytes, 0u);
  // Rows shorter than 2^17 finish in about what a split costs.
  CudaLaunch shortRows = plan(2, 100000);
  EXPECT_EQ(kernel.entry(shortRows), "loupe_k_rowvec");
  EXPECT_EQ(shortRows.workspaceBytes, 0u);
  // A tiny reduction: one thread per output, no workspace.
  CudaLaunch tiny = plan(3, 5);
  EXPECT_EQ(kernel.entry(tiny), "loupe_k");
  EXPECT_EQ(tiny.workspaceBytes, 0u);
}

TEST(CudaLaunch, AKeptInnermostDimSplitsInTilesOfNeighbouringOutputs) {
  // x.sum(dim=0): each block takes a tile of neighbouring outputs, one per threadIdx.x.
  Kernel kernel(R"(
graph @g(%x: f32[s0,s1]) -> (f32[s1]) {
  %s = aten.sum.dim_IntList(%x) {dim=[0], keepdim=false} : f32[s1]
  return %s
})");
  EXPECT_TRUE(kernel.layout.splitColumns);
  auto plan = [&](int64_t rows, int64_t columns) {
    Tensor x = deviceTensor(kDevice, DType::F32, {rows, columns});
    Tensor s = deviceTensor(kDevice + (int64_t{1} << 36), DType::F32, {columns});
    return kernel.plan({rows, columns}, {&x}, s);
  };
  // [2^20, 8]: one tile of 8 outputs, 64 threads along the reduced dim, 528 splits.
  CudaLaunch eight = plan(1 << 20, 8);
  EXPECT_EQ(kernel.entry(eight), "loupe_k_split") << eight.why;
  EXPECT_NE(std::string(eight.why).find("tiles"), std::string::npos);
  EXPECT_EQ(eight.block[0], 8u);
  EXPECT_EQ(eight.block[1], 64u);
  EXPECT_EQ(eight.grid[0], 1u);
  EXPECT_EQ(eight.grid[1], 528u);
  EXPECT_EQ(eight.workspaceBytes, size_t(kSplitPartialsOffset + 8 * 528 * 8));
  // [2^18, 100]: four tiles of 32 (the last one partial), 132 splits each.
  CudaLaunch hundred = plan(1 << 18, 100);
  EXPECT_EQ(kernel.entry(hundred), "loupe_k_split");
  EXPECT_EQ(hundred.block[0], 32u);
  EXPECT_EQ(hundred.block[1], 16u);
  EXPECT_EQ(hundred.grid[0], 4u);
  EXPECT_EQ(hundred.grid[1], 132u);
  EXPECT_EQ(hundred.workspaceBytes, size_t(kSplitPartialsOffset + 100 * 132 * 8));
  // A weight gradient's column sum over [8192, 256]: a thread per output would walk 8192
  // elements alone (9.7 ms on an H200); 8 tiles of 32 outputs, 64 splits of 128 rows.
  CudaLaunch norm = plan(8192, 256);
  EXPECT_EQ(kernel.entry(norm), "loupe_k_split") << norm.why;
  EXPECT_EQ(norm.block[0], 32u);
  EXPECT_EQ(norm.block[1], 16u);
  EXPECT_EQ(norm.grid[0], 8u);
  EXPECT_EQ(norm.grid[1], 64u);
  // 10000 columns nearly fill the block slots with their 313 tiles: two splits each.
  CudaLaunch wide = plan(1 << 18, 10000);
  EXPECT_EQ(kernel.entry(wide), "loupe_k_split") << wide.why;
  EXPECT_EQ(wide.grid[0], 313u);
  EXPECT_EQ(wide.grid[1], 2u);
  // Tiles past the counters (more than 4096 of 32 outputs) fill the GPU a thread an output;
  // so do reduced ranges shorter than kSplitColumnsMinimum.
  EXPECT_EQ(kernel.entry(plan(1024, 200000)), "loupe_k");
  EXPECT_EQ(kernel.entry(plan(kSplitColumnsMinimum - 1, 256)), "loupe_k");
  EXPECT_EQ(kernel.entry(plan(kSplitColumnsMinimum, 256)), "loupe_k_split");
  // The innermost-reduced kernel takes whole rows: 512 threads along x.
  Kernel rows(kSymbolicSum);
  EXPECT_FALSE(rows.layout.splitColumns);
}

// The row kernel of a fused softmax over [s0, s1]: three passes over each row.
CudaKernelLayout softmaxRowLayout() {
  auto softmax = testing::fusedGraph(R"(
graph @g(%x: f32[s0,s1]) -> (f32[s0,s1]) {
  %s = aten._softmax(%x) {dim=-1, half_to_float=false} : f32[s0,s1]
  return %s
})");
  for (const Node* node : softmax->nodes())
    if (canGenerateCudaKernel(*node, nullptr)) return describeCudaKernel(*node);
  throw Error("test", "no generated node in the fused softmax");
}

TEST(CudaLaunch, MultiPassRowsThatFitAreCachedInSharedMemory) {
  CudaKernelLayout layout = softmaxRowLayout();
  ASSERT_GT(layout.passes, 1);
  auto plan = [&](int64_t rows, int64_t columns) {
    Tensor x = deviceTensor(kDevice, DType::F32, {rows, columns});
    Tensor y = deviceTensor(kDevice + (int64_t{1} << 36), DType::F32, {rows, columns});
    return planCudaLaunch(layout, KernelBinding{{rows, columns}, {}}, {&x}, {&y}, 132);
  };
  // One block per 8192-float row: the row's 32 KB kept for the passes after the first.
  CudaLaunch wide = plan(8192, 8192);
  EXPECT_EQ(layout.entries.at(wide.entry), CudaEntryRole::ReductionRowVectorised) << wide.why;
  EXPECT_EQ(wide.sharedBytes, 8192u * 4u);
  EXPECT_NE(std::string(wide.why).find("cached"), std::string::npos) << wide.why;
  // A block per row, each block one row (up to 128 blocks per SM); warp rows, eight to a block,
  // loop over a grid of 16 blocks per SM.
  EXPECT_EQ(wide.block[0], 256u);
  EXPECT_EQ(wide.grid[0], 8192u);
  EXPECT_EQ(plan(20000, 8192).grid[0], 128u * 132u);
  CudaLaunch warps = plan(65536, 1024);
  EXPECT_EQ(warps.block[0], 32u);
  EXPECT_EQ(warps.grid[0], 16u * 132u);
  // Eight rows of 1000 floats to a block (a warp each), each row's region 4000 bytes.
  EXPECT_EQ(plan(2048, 1000).sharedBytes, 8u * 4000u);
  // Eight rows of 1536 floats are exactly 48 KB: no room left for the static partials of the
  // reductions, so not cached (such a launch fails).
  EXPECT_EQ(plan(2048, 1536).sharedBytes, 0u);
  EXPECT_EQ(plan(2048, 1472).sharedBytes, 8u * 1472u * 4u);
  // Few rows take a block each: one row's region.
  EXPECT_EQ(plan(64, 1536).sharedBytes, 1536u * 4u);
  // Rows of 16384 floats (64 KB) do not fit: read again from L2.
  CudaLaunch wider = plan(64, 16384);
  EXPECT_EQ(wider.sharedBytes, 0u);
  EXPECT_EQ(std::string(wider.why).find("cached"), std::string::npos) << wider.why;
}

// A layer norm's three passes: mean, variance, normalise. Only the last reads the weight and
// bias, which are the same for every row: the row cache keeps x alone.
TEST(CudaLaunch, TheRowCacheKeepsOnlyInputsThatDifferByRowAndAreReadAgain) {
  auto graph = testing::fusedGraph(R"(
graph @g(%x: bf16[s0,768], %w: bf16[768], %b: bf16[768]) -> (bf16[s0,768]) {
  %y, %mean, %rstd = aten.native_layer_norm(%x, %w, %b) {eps=1e-05, normalized_shape=[768]} : (bf16[s0,768], f32[s0,1], f32[s0,1])
  return %y
})");
  const Node* fused = nullptr;
  for (const Node* node : graph->nodes())
    if (canGenerateCudaKernel(*node, nullptr)) fused = node;
  ASSERT_NE(fused, nullptr);
  CudaKernelLayout layout = describeCudaKernel(*fused);
  ASSERT_EQ(layout.passes, 3);
  // Inputs in the fused node's order: x, then the weight and the bias.
  ASSERT_EQ(layout.numInputs, 3u);
  EXPECT_EQ(layout.readInPasses, (std::vector<uint64_t>{0b111, 0b100, 0b100}));
  EXPECT_EQ(layout.differsByRow, (std::vector<bool>{true, false, false}));
  EXPECT_EQ(layout.rowCached, (std::vector<bool>{true, false, false}));

  int64_t rows = 65536;
  Tensor x = deviceTensor(kDevice, DType::BF16, {rows, 768});
  Tensor w = deviceTensor(kDevice + (int64_t{1} << 36), DType::BF16, {768});
  Tensor b = deviceTensor(kDevice + (int64_t{2} << 36), DType::BF16, {768});
  Tensor y = deviceTensor(kDevice + (int64_t{3} << 36), DType::BF16, {rows, 768});
  CudaLaunch launch =
      planCudaLaunch(layout, KernelBinding{{rows, 768}, {}}, {&x, &w, &b}, {&y}, 132);
  EXPECT_EQ(layout.entries.at(launch.entry), CudaEntryRole::ReductionRowVectorised) << launch.why;
  // Eight rows a block (a warp each), 1536 bytes of x per row.
  EXPECT_EQ(launch.block[1], 8u);
  EXPECT_EQ(launch.sharedBytes, 8u * 768u * 2u);

  // The generated row entry reads the weight in its last pass only.
  GeneratedCudaKernel generated = generateCudaKernel(*fused, "k");
  size_t rowvec = generated.source.find("loupe_k_rowvec(");
  ASSERT_NE(rowvec, std::string::npos);
  std::string entry =
      generated.source.substr(rowvec, generated.source.find("\n}\n", rowvec) - rowvec);
  EXPECT_EQ(entry.find("loupe_vload(r1"), entry.rfind("loupe_vload(r1")) << entry;
  EXPECT_EQ(entry.find("cache1"), std::string::npos) << entry;
}

TEST(CudaLaunch, MultiPassRowGroupsAndShortStaticRowsHaveNoSplitEntry) {
  CudaKernelLayout layout = softmaxRowLayout();
  ASSERT_GT(layout.passes, 1);
  EXPECT_EQ(std::count(layout.entries.begin(), layout.entries.end(), CudaEntryRole::ReductionSplit),
            0);
  // Planned for one row of 2^24: still one block for the row.
  Tensor x = deviceTensor(kDevice, DType::F32, {1, 1 << 24});
  Tensor y = deviceTensor(kDevice + (int64_t{1} << 36), DType::F32, {1, 1 << 24});
  CudaLaunch launch = planCudaLaunch(layout, KernelBinding{{1, 1 << 24}, {}}, {&x}, {&y}, 132);
  EXPECT_EQ(layout.entries.at(launch.entry), CudaEntryRole::ReductionRowVectorised) << launch.why;
  EXPECT_EQ(launch.grid[0], 1u);
  EXPECT_EQ(launch.grid[1], 1u);
  EXPECT_EQ(launch.workspaceBytes, 0u);

  // A static reduced extent below 2^17 never splits: no entry to build.
  Kernel small(R"(
graph @g(%x: f32[s0,4096]) -> (f32[s0]) {
  %s = aten.sum.dim_IntList(%x) {dim=[1], keepdim=false} : f32[s0]
  return %s
})");
  EXPECT_EQ(std::count(small.layout.entries.begin(), small.layout.entries.end(),
                       CudaEntryRole::ReductionSplit),
            0);
  Kernel large(R"(
graph @g(%x: f32[s0,131072]) -> (f32[s0]) {
  %s = aten.sum.dim_IntList(%x) {dim=[1], keepdim=false} : f32[s0]
  return %s
})");
  EXPECT_EQ(large.layout.entries.back(), CudaEntryRole::ReductionSplit);
  EXPECT_EQ(large.generated.entries.back(), "loupe_k_split");
  EXPECT_STREQ(cudaEntryRoleName(CudaEntryRole::ReductionSplit), "reduction-split");
}

} // namespace
} // namespace loupe
