// The generated CUDA source: its entries, per group kind, and what is refused with a reason.
#include <gtest/gtest.h>

#include "compiler/codegen/cuda/cuda_codegen.h"
#include "compiler/codegen/cuda/cuda_kernel_abi.h"
#include "compiler/codegen/cuda/cuda_library_kernels.h"
#include "compiler/ir/error.h"
#include "compiler/ir/parser.h"
#include "unit_tests/compiler/codegen/cuda/fused_graph.h"

namespace loupe {
namespace {

const Node& firstNode(const Graph& graph) {
  return *graph.nodes().front();
}

// The strided entry has a narrow twin (32-bit coordinates and offsets) that the host picks where
// every offset fits (cuda_launch_test.cpp).
TEST(CudaCodegen, PointwiseHasAVectorisedAndAStridedEntry) {
  auto graph = parseGraph(R"(
graph @g(%x: f32[4,8], %b: f32[8]) -> (f32[4,8]) {
  %y = aten.add.Tensor(%x, %b) {alpha=1} : f32[4,8]
  return %y
})");
  GeneratedCudaKernel kernel = generateCudaKernel(firstNode(*graph), "k3");
  EXPECT_EQ(kernel.entries,
            (std::vector<std::string>{"loupe_k3_vec", "loupe_k3_narrow", "loupe_k3"}));
  for (const std::string& entry : kernel.entries)
    EXPECT_NE(kernel.source.find("extern \"C\" __global__ void __launch_bounds__(256) " + entry +
                                 "(const LoupeArgs_loupe_k3 args)"),
              std::string::npos)
        << kernel.source;
  EXPECT_NE(kernel.source.find("loupe_vload("), std::string::npos);
  EXPECT_EQ(kernel.source.find("#include"), std::string::npos);
  EXPECT_NE(kernel.strategy.find("pointwise"), std::string::npos);
  CudaKernelLayout layout = describeCudaKernel(firstNode(*graph));
  EXPECT_EQ(layout.vectorWidth, 4);
  EXPECT_EQ(layout.argWords(), 2u + 3u + 3u * 2u + 1u);
}

// Two layers' identical bias adds are one kernel source (one NVRTC compile); another op is not.
TEST(CudaCodegen, KernelsNamedByContentAreTheSameSourceForTheSameGroup) {
  auto graph = parseGraph(R"(
graph @g(%x: f32[4,8], %b: f32[8], %c: f32[8]) -> (f32[4,8]) {
  %y = aten.add.Tensor(%x, %b) {alpha=1} : f32[4,8]
  %z = aten.add.Tensor(%y, %c) {alpha=1} : f32[4,8]
  %w = aten.mul.Tensor(%z, %c) : f32[4,8]
  return %w
})");
  std::vector<const Node*> nodes;
  for (const Node* node : graph->nodes())
    nodes.push_back(node);
  ASSERT_EQ(nodes.size(), 3u);
  GeneratedCudaKernel first = generateCudaKernelNamedByContent(*nodes[0]);
  GeneratedCudaKernel second = generateCudaKernelNamedByContent(*nodes[1]);
  GeneratedCudaKernel product = generateCudaKernelNamedByContent(*nodes[2]);
  EXPECT_EQ(first.source, second.source);
  EXPECT_EQ(first.entries, second.entries);
  EXPECT_NE(first.source, product.source);
  ASSERT_EQ(first.entries.size(), 3u);
  ASSERT_EQ(product.entries.size(), 3u);
  EXPECT_NE(first.entries[0], product.entries[0]);
  // loupe_<12 hex digits>_vec, _narrow and loupe_<12 hex digits>, declared in the source; no
  // placeholder.
  const std::string& vec = first.entries[0];
  ASSERT_EQ(vec.size(), std::string("loupe_").size() + 12 + std::string("_vec").size()) << vec;
  EXPECT_EQ(vec.substr(vec.size() - 4), "_vec");
  EXPECT_EQ(vec.substr(6, 12).find_first_not_of("0123456789abcdef"), std::string::npos) << vec;
  EXPECT_EQ(first.entries[1], vec.substr(0, vec.size() - 4) + "_narrow");
  EXPECT_EQ(first.entries[2], vec.substr(0, vec.size() - 4));
  for (const std::string& entry : first.entries)
    EXPECT_NE(first.source.find(" " + entry + "(const LoupeArgs_" + first.entries[2] + " args)"),
              std::string::npos)
        << first.source;
  EXPECT_EQ(first.source.find("PLACEHOLDER"), std::string::npos);
}

TEST(CudaCodegen, HalfOperandsWidenTheVectorToEightElements) {
  auto graph = parseGraph(R"(
graph @g(%x: bf16[64]) -> (f32[64]) {
  %y = aten._to_copy(%x) {dtype=f32} : f32[64]
  return %y
})");
  EXPECT_EQ(describeCudaKernel(firstNode(*graph)).vectorWidth, 8);
  GeneratedCudaKernel kernel = generateCudaKernel(firstNode(*graph), "k");
  EXPECT_NE(kernel.source.find("loupe_bf2f("), std::string::npos);
}

TEST(CudaCodegen, InnerReductionHasARowAndAPerOutputEntry) {
  auto graph = parseGraph(R"(
graph @g(%x: f16[s0,128]) -> (f16[s0]) {
  %s = aten.sum.dim_IntList(%x) {dim=[1], keepdim=false} : f16[s0]
  return %s
})");
  GeneratedCudaKernel kernel = generateCudaKernel(firstNode(*graph), "k1");
  EXPECT_EQ(kernel.entries,
            (std::vector<std::string>{"loupe_k1_rowvec", "loupe_k1_row", "loupe_k1"}));
  EXPECT_NE(kernel.source.find("loupe_row_reduce("), std::string::npos);
  // f16 accumulates in float.
  EXPECT_NE(kernel.source.find("float acc0 = "), std::string::npos) << kernel.source;
  EXPECT_EQ(
      describeCudaKernel(firstNode(*graph)).entries,
      (std::vector<CudaEntryRole>{CudaEntryRole::ReductionRowVectorised,
                                  CudaEntryRole::ReductionRow, CudaEntryRole::ReductionPerOutput}));
}

TEST(CudaCodegen, OuterReductionHasOnlyThePerOutputEntry) {
  auto graph = parseGraph(R"(
graph @g(%x: f64[16,8]) -> (f64[1,8]) {
  %m = aten.amax(%x) {dim=[0], keepdim=true} : f64[1,8]
  return %m
})");
  GeneratedCudaKernel kernel = generateCudaKernel(firstNode(*graph), "k2");
  EXPECT_EQ(kernel.entries, (std::vector<std::string>{"loupe_k2"}));
  EXPECT_NE(kernel.source.find("double acc0 = "), std::string::npos) << kernel.source;
  EXPECT_NE(kernel.strategy.find("one thread per output"), std::string::npos);
}

// Gathers read in the kernel that consumes them: the strided entry alone (a gather's address
// needs the loop indices), each neighbour read at its clamped indices through the gathered
// input's own strides, its symbolic height a run-time scalar. The narrow entry (32-bit
// coordinates and offsets) gathers as the wide one does, its clamped indices multiplied in 32
// bits.
TEST(CudaCodegen, GathersAreReadInTheStridedEntry) {
  auto graph = testing::fusedGraph(testing::kBilinearUpsamplingGraph);
  const Node* fused = testing::onlyFusedNode(*graph);
  ASSERT_NE(fused, nullptr);
  GeneratedCudaKernel kernel = generateCudaKernel(*fused, "k1");
  EXPECT_EQ(kernel.entries, (std::vector<std::string>{"loupe_k1_narrow", "loupe_k1"}));
  size_t gathers = 0;
  for (size_t at = kernel.source.find("loupe_gather_index(static_cast<int64_t>(");
       at != std::string::npos;
       at = kernel.source.find("loupe_gather_index(static_cast<int64_t>(", at + 1))
    ++gathers;
  EXPECT_EQ(gathers, 16u) << kernel.source; // per entry, two indices for each of 4 neighbours
  EXPECT_NE(kernel.source.find("static_cast<int32_t>(loupe_gather_index("), std::string::npos)
      << kernel.source;
  EXPECT_NE(kernel.source.find("const int32_t i3 = rest"), std::string::npos) << kernel.source;
  EXPECT_NE(kernel.source.find("static_cast<int64_t>(sym0)"), std::string::npos);
  CudaKernelLayout layout = describeCudaKernel(*fused);
  EXPECT_EQ(layout.signature.gathered.front(), true);
}

// Constant indices within their dim are read as they are, on the GPU as on the CPU
// (GroupAnalysis::gatherIndicesInBounds).
TEST(CudaCodegen, ConstantIndicesWithinTheirDimAreReadWithoutAClamp) {
  auto graph = testing::fusedGraph(testing::kConstantIndexGatherGraph);
  const Node* fused = testing::onlyFusedNode(*graph);
  ASSERT_NE(fused, nullptr);
  GeneratedCudaKernel kernel = generateCudaKernel(*fused, "k1");
  EXPECT_EQ(kernel.source.find("loupe_gather_index(static_cast"), std::string::npos)
      << kernel.source;
  EXPECT_NE(kernel.source.find("static_cast<int32_t>(static_cast<int64_t>(x"), std::string::npos)
      << kernel.source;
}

// The scatter's shape, by which the runtime picks its entry: self's dims no index tensor indexes,
// then the block the index tensors broadcast to. Upsampling's gradient (two index tensors over a
// [2,3,4,5] self) iterates a rank-4 shape; one past rank 8 is refused, saying so.
TEST(CudaCodegen, TheScatterShapeIsTheUnindexedDimsAndTheIndexBlock) {
  auto graph = parseGraph(R"(
graph @scatters(%x: f32[2,3,4,5], %h: i64[8,1], %w: i64[10], %v: f32[2,3,8,10], %y: f32[2,2,2,2,2,2,2,2], %i: i64[2,2,2], %u: f32[2,2,2,2,2,2,2,2,2,2]) -> (f32[2,3,4,5], f32[2,2,2,2,2,2,2,2]) {
  %a = aten.index_put(%x, none, none, %h, %w, %v) {accumulate=true} : f32[2,3,4,5]
  %b = aten.index_put(%y, %i, %u) {accumulate=false} : f32[2,2,2,2,2,2,2,2]
  return %a, %b
})");
  const Node* upsampling = graph->nodes().at(0);
  CudaScatterShape shape = cudaScatterShape(*upsampling);
  EXPECT_EQ(shape.rank, 4u);
  EXPECT_EQ(shape.indexCount, 2u);
  std::string why;
  EXPECT_TRUE(isCudaScatterOp(*upsampling, &why)) << why;
  // The seven dims no index tensor indexes and a block of rank 3: rank 10.
  const Node* wide = graph->nodes().at(1);
  EXPECT_EQ(cudaScatterShape(*wide).rank, 10u);
  EXPECT_FALSE(isCudaScatterOp(*wide, &why));
  EXPECT_NE(why.find("rank 8 at most"), std::string::npos) << why;
}

TEST(CudaCodegen, RefusesWhatItCannotGenerateWithAReason) {
  auto graph = parseGraph(R"(
graph @g(%a: f32[4,8], %b: f32[8,4]) -> (f32[4,4]) {
  %c = aten.mm(%a, %b) : f32[4,4]
  return %c
})");
  std::string why;
  EXPECT_FALSE(canGenerateCudaKernel(firstNode(*graph), &why));
  EXPECT_NE(why.find("aten.mm"), std::string::npos) << why;
  EXPECT_THROW(generateCudaKernel(firstNode(*graph), "k"), Error);
}

TEST(CudaCodegen, RefusesAParameterBlockOverFourKilobytes) {
  // A chain of adds over `inputs` rank-8 inputs fuses into one group of inputs + 1 operands:
  // 8 + P + 8 P + 1 words.
  auto chain = [](int inputs) {
    std::string type = "f32[1,1,1,1,1,1,1,2]", text = "graph @g(";
    for (int i = 0; i < inputs; ++i)
      text += (i ? ", %x" : "%x") + std::to_string(i) + ": " + type;
    text += ") -> (" + type + ") {\n";
    std::string last = "%x0";
    for (int i = 1; i < inputs; ++i) {
      text += "  %y" + std::to_string(i) + " = aten.add.Tensor(" + last + ", %x" +
              std::to_string(i) + ") {alpha=1} : " + type + "\n";
      last = "%y" + std::to_string(i);
    }
    return testing::fusedGraph(text + "  return " + last + "\n}", {"pointwise-fusion"});
  };
  auto fits = chain(40); // 3024 bytes
  ASSERT_EQ(fits->nodes().size(), 1u);
  EXPECT_TRUE(canGenerateCudaKernel(*fits->nodes().front(), nullptr));
  auto tooMany = chain(60); // 4464 bytes
  std::string why;
  EXPECT_FALSE(canGenerateCudaKernel(*tooMany->nodes().front(), &why));
  EXPECT_NE(why.find("4464 bytes"), std::string::npos) << why;
}

// Factory ops of one value are memsets of the value's bytes in the result's dtype.
TEST(CudaFill, AFactoryOpOfOneValueIsAMemsetOfItsBytes) {
  auto graph = parseGraph(R"(
graph @g(%x: f32[4,8]<cuda:0>) -> (f32[4,8]<cuda:0>, f16[3]<cuda:0>, f64[2]<cuda:0>, f64[2]<cuda:0>, bool[5]<cuda:0>, i64[4]<cuda:0>) {
  %z = aten.zeros_like(%x) : f32[4,8]<cuda:0>
  %h = aten.full() {size=[3], fill_value=1.0, dtype=f16, device="cuda:0"} : f16[3]<cuda:0>
  %d = aten.new_zeros(%x) {size=[2], dtype=f64} : f64[2]<cuda:0>
  %o = aten.new_ones(%x) {size=[2], dtype=f64} : f64[2]<cuda:0>
  %b = aten.full() {size=[5], fill_value=1.0, dtype=bool, device="cuda:0"} : bool[5]<cuda:0>
  %r = aten.arange() {end=4, dtype=i64, device="cuda:0"} : i64[4]<cuda:0>
  return %z, %h, %d, %o, %b, %r
})");
  std::vector<const Node*> nodes;
  for (const Node* node : graph->nodes())
    nodes.push_back(node);
  auto fill = [&](size_t i, std::string* whyNot = nullptr) {
    return cudaFillOf(*nodes.at(i), nodes.at(i)->attrs(), whyNot);
  };
  ASSERT_TRUE(fill(0));
  EXPECT_EQ(fill(0)->wordBytes, 4u);
  EXPECT_EQ(fill(0)->word, 0u);
  ASSERT_TRUE(fill(1));
  EXPECT_EQ(fill(1)->wordBytes, 2u);
  EXPECT_EQ(fill(1)->word, 0x3C00u); // 1.0 in f16
  ASSERT_TRUE(fill(2));              // f64 zeros: two 4-byte words of zero per element
  EXPECT_EQ(fill(2)->wordsPerElement, 2);
  std::string why;
  EXPECT_FALSE(fill(3, &why)); // f64 1.0: its halves differ
  EXPECT_NE(why.find("halves differ"), std::string::npos) << why;
  ASSERT_TRUE(fill(4));
  EXPECT_EQ(fill(4)->wordBytes, 1u);
  EXPECT_EQ(fill(4)->word, 1u);
  EXPECT_FALSE(fill(5)); // arange's elements differ
  // A constant's elements are its data, whatever its first one.
  auto constant = parseGraph(R"(
graph @c() -> (f32[3]<cuda:0>) {
  %c = loupe.constant() {data=[0.0, 1.0, 2.0]} : f32[3]<cuda:0>
  return %c
})");
  EXPECT_FALSE(cudaFillOf(firstNode(*constant), firstNode(*constant).attrs(), nullptr));
}

} // namespace
} // namespace loupe
