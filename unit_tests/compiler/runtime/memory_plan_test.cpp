// The executable runs the memory plan: the buffers sit at the plan's offsets in an arena of the
// plan's size, outputs are allocations of their own; a symbolic plan is laid out per binding by
// the planner's own function; each call measures what it allocates, which matches the plan but
// for the scratch a kernel allocates; the instrumentation hears of each binding and of the
// kernel stats, whose times are sampled.
#include <gtest/gtest.h>

#include <map>

#include "compiler/codegen/cpu/library_kernels.h"
#include "compiler/ir/error.h"
#include "compiler/ir/parser.h"
#include "compiler/pass/memory_layout.h"
#include "unit_tests/compiler/codegen/codegen_test_support.h"

namespace loupe::testing {
namespace {

// %a lives long, %b and %c briefly: the arena reuses memory; %d (through the view %t) and %e
// are outputs.
constexpr const char* kChain =
    R"(graph @chain(%x: f32[8,16], %w: f32[16,16]) -> (f32[8,16], f32[16,8]<strides=[1,16]>) {
  %a = aten.relu(%x) : f32[8,16]
  %b = aten.exp(%a) : f32[8,16]
  %m = aten.mm(%b, %w) : f32[8,16]
  %c = aten.relu(%m) : f32[8,16]
  %d = aten.add.Tensor(%c, %a) : f32[8,16]
  %t = aten.permute(%d) {dims=[1,0]} : f32[16,8]<strides=[1,16]>
  %e = aten.exp(%m) : f32[8,16]
  return %e, %t
})";

// The columns of %x two apart: a view BLAS takes neither as it is nor transposed, so the
// library's mm packs a copy of it.
constexpr const char* kStridedMatmul =
    R"(graph @strided(%x: f32[8,32], %w: f32[16,16]) -> (f32[8,16]) {
  %h = aten.slice.Tensor(%x) {dim=1, start=0, end=32, step=2} : f32[8,16]<strides=[32,2]>
  %m = aten.mm(%h, %w) : f32[8,16]
  %r = aten.relu(%m) : f32[8,16]
  return %r
})";

constexpr const char* kSymbolic = R"(graph @batch(%x: f32[s0,16]) -> (f32[s0,16]) {
  %a = aten.relu(%x) : f32[s0,16]
  %b = aten.exp(%a) : f32[s0,16]
  %c = aten.add.Tensor(%a, %b) : f32[s0,16]
  return %c
})";

ExecutableOptions testOptions() {
  ExecutableOptions options;
  options.compiler.cacheDir = testCacheDir();
  return options;
}

Plan plannedFor(const Graph& graph) {
  Plan plan;
  plan.memory = planMemory(graph);
  return plan;
}

std::vector<Tensor> inputsFor(const Graph& graph, int64_t batch = 0) {
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < graph.numInputs(); ++i)
    inputs.push_back(
        randomTensor(DType::F32, evaluateShape(graph.input(i)->tensorType().shape, {{"s0", batch}}),
                     static_cast<unsigned>(i + 1)));
  return inputs;
}

int64_t bytes(const SymExpr& e) {
  return *e.constant();
}

TEST(MemoryPlanRun, BuffersSitAtThePlannedOffsetsInAnArenaOfThePlannedSize) {
  auto graph = parseGraph(kChain);
  Plan plan = plannedFor(*graph);
  ASSERT_TRUE(plan.memory.concrete);
  // Each step's result address, by value name (the steps' stats keys are node descriptions).
  std::map<std::string, std::string> valueOfStep;
  for (const Node* node : graph->nodes())
    valueOfStep[node->describe()] = node->result()->name();
  std::map<std::string, const char*> addressOf;
  ExecutableOptions options = testOptions();
  options.afterStep = [&](const std::string& kernel, std::vector<Tensor>& outputs) {
    addressOf[valueOfStep.at(kernel)] = outputs.at(0).dataAs<char>();
  };
  Executable executable(*graph, plan, options);
  executable.run(inputsFor(*graph));

  const int64_t arena = bytes(plan.memory.arenaBytes);
  EXPECT_EQ(executable.arenaBytes(), arena);
  const char* base = nullptr;
  for (const BufferAssignment& b : plan.memory.buffers)
    if (b.offset == 0) base = addressOf.at(b.value);
  ASSERT_NE(base, nullptr) << "the largest intermediate sits at offset 0";
  int arenaBuffers = 0;
  for (size_t i = 0; i < plan.memory.buffers.size(); ++i) {
    const BufferAssignment& b = plan.memory.buffers[i];
    EXPECT_EQ(executable.memoryLayout().offsets[i], b.offset) << "%" << b.value;
    if (b.graphInput) continue;
    const char* at = addressOf.at(b.value);
    if (b.graphOutput) {
      EXPECT_EQ(b.offset, -1) << "%" << b.value;
      EXPECT_TRUE(at < base || at >= base + arena) << "%" << b.value << " is in the arena";
    } else {
      EXPECT_EQ(at - base, b.offset) << "%" << b.value;
      ++arenaBuffers;
    }
  }
  EXPECT_EQ(arenaBuffers, 4); // a, b, m, c
}

TEST(MemoryPlanRun, AnExecutableGivenNoPlanRunsTheOnePlanMemoryMakes) {
  auto graph = parseGraph(kChain);
  Executable executable(*graph, Plan{}, testOptions());
  executable.run(inputsFor(*graph));
  MemoryPlan expected = planMemory(*graph);
  EXPECT_EQ(executable.arenaBytes(), bytes(expected.arenaBytes));
  EXPECT_EQ(executable.memoryLayout().offsets, layoutToRun(expected, {}).offsets);
}

// A split is a view op without a view rule: the executable runs its reference, which copies its
// results into buffers, so the plan made for the graph as written gives them buffers.
TEST(MemoryPlanRun, ASplitsResultsHaveBuffersOfTheirOwn) {
  auto graph = parseGraph(R"(graph @split(%x: f32[4,8]) -> (f32[4,8]) {
  %a, %b = aten.split.Tensor(%x) {dim=1, split_size=4} : (f32[4,4]<strides=[8,1]>, f32[4,4]<strides=[8,1]>)
  %c = aten.add.Tensor(%a, %b) : f32[4,4]
  %d = aten.cat(%c, %a) {dim=1} : f32[4,8]
  return %d
})");
  Executable executable(*graph, Plan{}, testOptions());
  std::vector<Tensor> inputs = inputsFor(*graph);
  std::vector<Tensor> out = executable.run(inputs);
  ASSERT_EQ(out.size(), 1u);
  for (int64_t row = 0; row < 4; ++row)
    for (int64_t col = 0; col < 4; ++col) {
      double a = inputs[0].at(row * 8 + col), b = inputs[0].at(row * 8 + 4 + col);
      EXPECT_FLOAT_EQ(out[0].at(row * 8 + col), float(a + b));
      EXPECT_FLOAT_EQ(out[0].at(row * 8 + 4 + col), float(a));
    }
}

TEST(MemoryPlanRun, APlanForAnotherGraphIsRefused) {
  auto graph = parseGraph(kChain), other = parseGraph(kStridedMatmul);
  EXPECT_THROW(Executable(*graph, plannedFor(*other), testOptions()), Error);
}

TEST(MemoryPlanRun, TheMeasuredPeakIsThePlannedOneWhenNoKernelAllocates) {
  auto graph = parseGraph(kChain);
  Plan plan = plannedFor(*graph);
  Executable executable(*graph, plan, testOptions());
  for (int call = 0; call < 2; ++call)
    executable.run(inputsFor(*graph));
  const MemoryUse& use = executable.memoryUses().at({});
  EXPECT_EQ(use.calls, 2);
  EXPECT_EQ(use.layout.peakBytes, bytes(plan.memory.peakBytes));
  EXPECT_EQ(use.measuredPeakBytes, bytes(plan.memory.peakBytes));
}

TEST(MemoryPlanRun, ALibraryKernelsPackedCopyIsTheMeasuredExcessAndItsScratch) {
  auto graph = parseGraph(kStridedMatmul);
  Plan plan = plannedFor(*graph);
  Node* mm = graph->nodes()[1];
  mm->attrs().set("kernel", std::string("k0"));
  plan.kernels.push_back({.name = "k0", .op = mm->op(), .kind = KernelKind::Library});
  Executable executable(*graph, plan, testOptions());
  executable.run(inputsFor(*graph));
  // The strided operand packed (and, on oneDNN's matmul, its scratchpad besides).
  const int64_t packedCopy = 8 * 16 * 4;
  const int64_t scratch = executable.stats().kernels.at("k0").scratchBytes;
  EXPECT_GE(scratch, packedCopy);
  if (!cpuLibraryHasF32Matmul()) {
    EXPECT_EQ(scratch, packedCopy);
  }
  const int64_t planned = bytes(plan.memory.peakBytes);
  EXPECT_EQ(executable.memoryUses().at({}).measuredPeakBytes, planned + scratch);
}

struct Reports : RunInstrumentation {
  std::vector<MemoryUse> uses;
  int statsReports = 0;
  int64_t callsReported = 0;
  void onMemoryUse(const MemoryUse& use) override { uses.push_back(use); }
  void onKernelStats(const ExecutionStats& stats) override {
    ++statsReports;
    callsReported = 0;
    for (const auto& [name, kernel] : stats.kernels)
      callsReported += kernel.calls;
  }
};

TEST(MemoryPlanRun, ASymbolicPlanIsLaidOutPerBindingByThePlannersFunction) {
  auto graph = parseGraph(kSymbolic);
  Plan plan = plannedFor(*graph);
  ASSERT_FALSE(plan.memory.concrete);
  Reports reports;
  ExecutableOptions options = testOptions();
  options.instrumentation = &reports;
  Executable executable(*graph, plan, options);
  for (int64_t batch : {2, 5, 2}) {
    executable.run(inputsFor(*graph, batch));
    MemoryLayout expected = layOutMemory(plan.memory, {{"s0", batch}});
    EXPECT_EQ(executable.memoryLayout().offsets, expected.offsets);
    EXPECT_EQ(executable.arenaBytes(), expected.arenaBytes) << "s0=" << batch;
  }
  ASSERT_EQ(executable.memoryUses().size(), 2u);
  EXPECT_EQ(executable.memoryUses().at({{"s0", 2}}).calls, 2);
  // Each binding is reported once, after its first call, with what that call measured.
  ASSERT_EQ(reports.uses.size(), 2u);
  EXPECT_EQ(reports.uses[0].bindings, (SymbolBindings{{"s0", 2}}));
  EXPECT_EQ(reports.uses[1].bindings, (SymbolBindings{{"s0", 5}}));
  for (const MemoryUse& use : reports.uses)
    EXPECT_EQ(use.measuredPeakBytes, use.layout.peakBytes);
}

TEST(MemoryPlanRun, KernelStatsAreReportedPeriodicallyAndWhenTheExecutableIsDestroyed) {
  auto graph = parseGraph(kSymbolic);
  Reports reports;
  ExecutableOptions options = testOptions();
  options.instrumentation = &reports;
  options.statsReportInterval = std::chrono::hours(1);
  {
    Executable executable(*graph, Plan{}, options);
    executable.run(inputsFor(*graph, 3));
    EXPECT_EQ(reports.statsReports, 0) << "not due yet";
    executable.reportStats();
    EXPECT_EQ(reports.statsReports, 1);
    EXPECT_EQ(reports.callsReported, 3); // one call of each of three steps
    executable.run(inputsFor(*graph, 3));
  }
  EXPECT_EQ(reports.statsReports, 2) << "the destructor reports the calls since";
  EXPECT_EQ(reports.callsReported, 6);

  options.statsReportInterval = std::chrono::milliseconds(0);
  Executable executable(*graph, Plan{}, options);
  executable.run(inputsFor(*graph, 3));
  EXPECT_EQ(reports.statsReports, 3) << "due at the end of every run";
}

TEST(MemoryPlanRun, KernelTimesAreSampledAndScaledToEveryCall) {
  auto graph = parseGraph(kSymbolic);
  Executable executable(*graph, Plan{}, testOptions());
  std::vector<Tensor> inputs = inputsFor(*graph, 4);
  for (int call = 0; call < 40; ++call)
    executable.run(inputs);
  for (const auto& [name, kernel] : executable.stats().kernels) {
    EXPECT_EQ(kernel.calls, 40) << name;
    // The first 16 calls, then calls 16 and 32.
    EXPECT_EQ(kernel.timedCalls, Executable::kTimedCallEvery + 2) << name;
    EXPECT_DOUBLE_EQ(kernel.totalMs, kernel.timedMs * 40 / double(kernel.timedCalls)) << name;
  }
}

} // namespace
} // namespace loupe::testing
