// What the writer stores, the reader returns unchanged; and the writer refuses records that
// would break the documented schema.

#include "inspector/trace/trace_error.h"
#include "inspector/trace/trace_reader.h"
#include "inspector/trace/trace_writer.h"
#include "trace_test_support.h"

#include <gtest/gtest.h>

#include <regex>

namespace loupe {
namespace {

using testing::queryInt;
using testing::sampleCompile;
using testing::samplePass;
using testing::sampleRun;
using testing::sampleSnapshot;
using testing::ScratchDir;
using testing::traceErrorMessage;

const std::vector<StackFrame> kUserStack = {
    {.file = "/home/me/train.py", .line = 40, .function = "main", .code = "loss = model(x)"},
    {.file = "/home/me/mlp.py", .line = 14, .function = "forward", .code = "print(x.shape)"},
};

TEST(TraceRoundTrip, EverythingWrittenReadsBackEqual) {
  ScratchDir dir;
  const std::string path = dir.file("trace.db");
  const RunInfo run = sampleRun("host-a");
  const CompileInfo compile = sampleCompile("0/1");
  const SnapshotRecord decomposed = sampleSnapshot("forward", 3);
  const SnapshotRecord fused = sampleSnapshot("forward_fused", 2);
  const std::vector<PassRecord> pipeline = {
      samplePass("decompose", 0, decomposed),
      samplePass("cse", 1, decomposed), // changed nothing: the same snapshot again
      samplePass("fuse_pointwise", 2, fused),
      PassRecord{.info = {.name = "plan_memory",
                          .ordinal = 3,
                          .wall_ms = 0.5,
                          .nodes_before = 2,
                          .nodes_after = 2,
                          .status = "failed",
                          .error_message = "arena exhausted"},
                 .snapshot = std::nullopt},
  };
  const DecisionRecord decision = {.ordinal = 1,
                                   .kind = "fusion",
                                   .description = "fuse relu into relu",
                                   .nodes = {"1", "2"},
                                   .applied = true,
                                   .rule_file = "passes/pointwise_fusion.cpp",
                                   .rule_line = 55};
  // An injected fault's announcement: no rule made it.
  const DecisionRecord fault = {.ordinal = 0,
                                .kind = "fault",
                                .description = "injected fault after decision 1",
                                .nodes = {"2"}};
  const std::vector<KernelRecord> kernels = {
      {.name = "k0",
       .kind = "generated",
       .target = "cpu",
       .op_summary = "relu -> relu",
       .reason = "pointwise chain",
       .alternatives = {{.kind = "fallback", .target = "cpu", .why = "slower: two passes"}},
       .fused_nodes = {"1", "2"},
       .source = "void k0(float* out, const float* in, long n) {}",
       .max_error = 1.5e-7,
       .cache = "built",
       .build_ms = 812.5},
      {.name = "k1",
       .kind = "fallback",
       .target = "cpu",
       .op_summary = "aten.nonzero",
       .reason = "data-dependent output shape",
       .alternatives = {{.kind = "generated", .target = "cpu", .why = "unsupported op"},
                        {.kind = "library", .target = "cuda", .why = "no CUDA device"}},
       .fused_nodes = {"0"},
       .source = "",
       .max_error = std::nullopt},
  };
  const std::vector<BufferRecord> buffers = {
      {.name = "x",
       .size_bytes = 4096,
       .offset = std::nullopt,
       .first_use = 0,
       .last_use = 1,
       .is_graph_input = true},
      {.name = "buf0",
       .size_bytes = 4096,
       .offset = 0,
       .first_use = 1,
       .last_use = 2,
       .is_graph_output = true},
  };
  const MemoryPlanRecord plan = {.arena_bytes = 8192, .peak_bytes = 12288, .output_bytes = 4096};
  const MemoryLayoutRecord layout = {.bindings = {{"s0", 8}},
                                     .arena_bytes = 8192,
                                     .output_bytes = 4096,
                                     .peak_bytes = 12288,
                                     .measured_peak_bytes = 12800,
                                     .offsets = {{"3", 0}, {"4", 4096}},
                                     .sizes = {{"x", 4096}, {"3", 4096}, {"4", 2048}}};
  const GuardRecord guard = {.kind = "SHAPE_ENV",
                             .expr = "L['x'].size()[0] <= 1024",
                             .user_stack = kUserStack,
                             .failed = true};
  const RecompileRecord recompile = {.previous_compile_key = "0/0",
                                     .reason = "size mismatch",
                                     .failed_guard = "L['x'].size()[0] == 8"};
  const std::vector<KernelStatsRecord> stats = {
      {.kernel = "k0",
       .implementation = "library:aten.mm",
       .calls = 10,
       .total_ms = 3.75,
       .scratch_bytes = 512,
       .profile_ms = 0.25,
       .profile_runs = 5,
       .bytes = 1 << 20,
       .flops = 2.5e8,
       .peak_fraction = 0.625,
       .bound = "compute"},
      {.kernel = "k1", .implementation = "generated:loupe.fused", .calls = 10, .total_ms = 0.5}};
  const CompileOutcome outcome = {.status = "ok", .wall_ms = 42.5};
  const RunErrorRecord run_error = {.node = "%5 = loupe.fallback",
                                    .message = "runtime error: shape mismatch",
                                    .created_at = "2024-05-01T12:00:04.000Z"};

  int64_t run_id = 0;
  int64_t compile_id = 0;
  std::vector<int64_t> pass_ids;
  GraphBreakRecord graph_break;
  WarningRecord warning;
  {
    TraceWriter writer(path);
    run_id = writer.beginRun(run);
    compile_id = writer.beginCompile(run_id, compile);
    for (const PassRecord& pass : pipeline)
      pass_ids.push_back(writer.recordPass(compile_id, pass));
    writer.recordDecision(pass_ids[2], decision);
    writer.recordDecision(pass_ids[2], fault);
    for (const KernelRecord& kernel : kernels)
      writer.recordKernel(compile_id, kernel);
    writer.recordBuffers(compile_id, buffers);
    writer.recordMemoryPlan(compile_id, plan);
    graph_break = {.compile_id = compile_id,
                   .frame_name = "forward",
                   .reason = "print() is not supported",
                   .user_stack = kUserStack,
                   .created_at = "2024-05-01T12:00:02.000Z"};
    writer.recordGraphBreak(run_id, graph_break);
    writer.recordGuard(compile_id, guard);
    writer.recordRecompile(compile_id, recompile);
    warning = {.compile_id = compile_id,
               .message = "falling back for aten.nonzero",
               .created_at = "2024-05-01T12:00:03.000Z"};
    writer.recordWarning(run_id, warning);
    writer.recordKernelStats(compile_id, stats);
    writer.recordMemoryLayout(compile_id, layout);
    writer.recordRunError(compile_id, run_error);
    writer.finishCompile(compile_id, outcome);
  }

  TraceReader reader(path);
  ASSERT_EQ(reader.runs().size(), 1u);
  EXPECT_EQ(reader.runs()[0].id, run_id);
  EXPECT_EQ(reader.runs()[0].info, run);

  std::vector<CompileRow> compiles = reader.compiles(run_id);
  ASSERT_EQ(compiles.size(), 1u);
  EXPECT_EQ(compiles[0].id, compile_id);
  EXPECT_EQ(compiles[0].run_id, run_id);
  EXPECT_EQ(compiles[0].info, compile);
  EXPECT_EQ(compiles[0].outcome, outcome);
  EXPECT_EQ(reader.compile(compile_id).info, compile);

  std::vector<PassRow> passes = reader.passes(compile_id);
  ASSERT_EQ(passes.size(), pipeline.size());
  for (size_t index = 0; index < pipeline.size(); ++index) {
    EXPECT_EQ(passes[index].id, pass_ids[index]);
    EXPECT_EQ(passes[index].info, pipeline[index].info);
  }
  ASSERT_TRUE(passes[0].snapshot_id && passes[2].snapshot_id);
  EXPECT_EQ(passes[0].snapshot_id, passes[1].snapshot_id);
  EXPECT_NE(passes[0].snapshot_id, passes[2].snapshot_id);
  EXPECT_FALSE(passes[3].snapshot_id);
  EXPECT_EQ(reader.snapshot(*passes[0].snapshot_id), decomposed);
  EXPECT_EQ(reader.snapshot(*passes[2].snapshot_id), fused);

  std::vector<DecisionRow> decisions = reader.decisions(compile_id);
  ASSERT_EQ(decisions.size(), 2u); // in ordinal order: the fault's 0 first
  EXPECT_EQ(decisions[0].decision, fault);
  EXPECT_EQ(decisions[1].pass_id, pass_ids[2]);
  EXPECT_EQ(decisions[1].decision, decision);

  EXPECT_EQ(reader.kernels(compile_id), kernels);
  EXPECT_EQ(reader.buffers(compile_id), buffers);
  EXPECT_EQ(reader.memoryPlan(compile_id), plan);
  EXPECT_EQ(reader.kernelStats(compile_id), stats); // slowest first
  EXPECT_EQ(reader.memoryLayouts(compile_id), std::vector<MemoryLayoutRecord>{layout});
  EXPECT_EQ(reader.runErrors(compile_id), std::vector<RunErrorRecord>{run_error});
  EXPECT_EQ(reader.graphBreaks(run_id), std::vector<GraphBreakRecord>{graph_break});
  EXPECT_EQ(reader.guards(compile_id), std::vector<GuardRecord>{guard});
  EXPECT_EQ(reader.recompiles(compile_id), std::vector<RecompileRecord>{recompile});
  EXPECT_EQ(reader.warnings(run_id), std::vector<WarningRecord>{warning});

  TraceReader::Summary expected;
  expected.runs = 1;
  expected.compiles = 1;
  expected.passes = 4;
  expected.snapshots = 2;
  expected.nodes = 5;
  expected.decisions = 2;
  expected.graph_breaks = 1;
  expected.guards = 1;
  expected.recompiles = 1;
  expected.warnings = 1;
  expected.kernels_by_kind = {{"generated", 1}, {"fallback", 1}};
  expected.fallback_kernels = 1;
  EXPECT_EQ(reader.summary(), expected);
}

TEST(TraceRoundTrip, IdenticalSnapshotsAreStoredOnceAcrossCompiles) {
  ScratchDir dir;
  const std::string path = dir.file("trace.db");
  TraceWriter writer(path);
  int64_t run_id = writer.beginRun(sampleRun("host-a"));
  int64_t first = writer.beginCompile(run_id, sampleCompile("0/0"));
  int64_t second = writer.beginCompile(run_id, sampleCompile("0/1"));
  writer.recordPass(first, samplePass("cse", 0, sampleSnapshot("forward", 4)));
  writer.recordPass(second, samplePass("cse", 0, sampleSnapshot("forward", 4)));
  writer.recordPass(second, samplePass("dce", 1, sampleSnapshot("forward", 3)));

  TraceReader reader(path);
  EXPECT_EQ(reader.summary().snapshots, 2);
  EXPECT_EQ(reader.summary().nodes, 7);
  EXPECT_EQ(reader.passes(first)[0].snapshot_id, reader.passes(second)[0].snapshot_id);
}

TEST(TraceRoundTrip, CompileIsRunningUntilFinished) {
  ScratchDir dir;
  const std::string path = dir.file("trace.db");
  TraceWriter writer(path);
  int64_t compile_id =
      writer.beginCompile(writer.beginRun(sampleRun("host-a")), sampleCompile("0/0"));

  TraceReader reader(path);
  EXPECT_EQ(reader.compile(compile_id).outcome, (CompileOutcome{.status = "running"}));

  const CompileOutcome failed = {.status = "eager_fallback",
                                 .error_message = "shape mismatch in aten.mm",
                                 .error_pass = "propagate_shapes",
                                 .wall_ms = 3.5};
  writer.finishCompile(compile_id, failed);
  EXPECT_EQ(reader.compile(compile_id).outcome, failed);
}

TEST(TraceRoundTrip, GuardsRecordedTogetherReadBackInOrder) {
  ScratchDir dir;
  const std::string path = dir.file("trace.db");
  TraceWriter writer(path);
  int64_t compile_id =
      writer.beginCompile(writer.beginRun(sampleRun("host-a")), sampleCompile("0/0"));
  const std::vector<GuardRecord> guards = {
      {.kind = "TENSOR_MATCH", .expr = "check_tensor(L['x'])"},
      {.kind = "SHAPE_ENV", .expr = "L['x'].size()[0] == 8", .user_stack = kUserStack},
      {.kind = "ID_MATCH", .expr = "___check_obj_id(L['self'], 1)"}};
  writer.recordGuards(compile_id, guards);
  writer.recordGuards(compile_id, {});
  EXPECT_EQ(TraceReader(path).guards(compile_id), guards);
}

TEST(TraceRoundTrip, TracedLinesReadBackInOrderAndAreReplaced) {
  ScratchDir dir;
  const std::string path = dir.file("trace.db");
  TraceWriter writer(path);
  int64_t compile_id =
      writer.beginCompile(writer.beginRun(sampleRun("host-a")), sampleCompile("0/0"));
  const std::vector<TracedLine> lines = {{.file = "m.py", .line = 3, .function = "f"},
                                         {.file = "n.py", .line = 9, .function = "g", .depth = 1},
                                         {.file = "m.py", .line = 3, .function = "f"}};
  writer.recordTracedLines(compile_id, {{.file = "m.py", .line = 1, .function = "f"}});
  writer.recordTracedLines(compile_id, lines); // a restarted trace replaces the first
  EXPECT_EQ(TraceReader(path).tracedLines(compile_id), lines);
}

TEST(TraceRoundTrip, WriterStampsMissingTimestamps) {
  ScratchDir dir;
  const std::string path = dir.file("trace.db");
  TraceWriter writer(path);
  RunInfo run = sampleRun("host-a");
  run.started_at = "";
  int64_t run_id = writer.beginRun(run);
  writer.recordWarning(run_id, WarningRecord{.message = "no CUDA device"});

  TraceReader reader(path);
  const std::regex iso_utc(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)");
  EXPECT_TRUE(std::regex_match(reader.runs()[0].info.started_at, iso_utc))
      << reader.runs()[0].info.started_at;
  EXPECT_TRUE(std::regex_match(reader.warnings(run_id)[0].created_at, iso_utc))
      << reader.warnings(run_id)[0].created_at;
}

TEST(TraceRoundTrip, PlanLayoutsAndKernelStatsAreReplacedNotDuplicated) {
  ScratchDir dir;
  const std::string path = dir.file("trace.db");
  TraceWriter writer(path);
  int64_t compile_id =
      writer.beginCompile(writer.beginRun(sampleRun("host-a")), sampleCompile("0/0"));
  writer.recordMemoryPlan(compile_id, {.arena_bytes = 100, .peak_bytes = 200});
  writer.recordMemoryPlan(compile_id,
                          {.arena_bytes = 100, .peak_bytes = 200, .measured_peak_bytes = 250});
  writer.recordKernelStats(compile_id, {{.kernel = "k0", .calls = 1, .total_ms = 2},
                                        {.kernel = "k1", .calls = 1, .total_ms = 1}});
  writer.recordKernelStats(compile_id, {{.kernel = "k0", .calls = 5, .total_ms = 9}});
  const MemoryLayoutRecord at8 = {.bindings = {{"s0", 8}}, .peak_bytes = 80},
                           at16 = {.bindings = {{"s0", 16}}, .peak_bytes = 160};
  writer.recordMemoryLayout(compile_id, at8);
  writer.recordMemoryLayout(compile_id, at16);
  MemoryLayoutRecord at8Measured = at8;
  at8Measured.measured_peak_bytes = 96;
  writer.recordMemoryLayout(compile_id, at8Measured);

  TraceReader reader(path);
  EXPECT_EQ(reader.memoryPlan(compile_id),
            (MemoryPlanRecord{.arena_bytes = 100, .peak_bytes = 200, .measured_peak_bytes = 250}));
  EXPECT_EQ(reader.kernelStats(compile_id),
            (std::vector<KernelStatsRecord>{{.kernel = "k0", .calls = 5, .total_ms = 9},
                                            {.kernel = "k1", .calls = 1, .total_ms = 1}}));
  // A binding measured again keeps its place: the first recorded comes first.
  EXPECT_EQ(reader.memoryLayouts(compile_id), (std::vector<MemoryLayoutRecord>{at8Measured, at16}));
  EXPECT_EQ(queryInt(path, "SELECT count(*) FROM memory_plans"), 1);
  EXPECT_FALSE(reader.memoryPlan(compile_id + 1));
}

TEST(TraceRoundTrip, CudaGraphStatsAreTheLatestTotalsOfACompile) {
  ScratchDir dir;
  const std::string path = dir.file("trace.db");
  TraceWriter writer(path);
  int64_t run_id = writer.beginRun(sampleRun("host-a"));
  int64_t replayed = writer.beginCompile(run_id, sampleCompile("0/0"));
  int64_t launched = writer.beginCompile(run_id, sampleCompile("1/0"));
  writer.recordCudaGraphStats(replayed, {.chosen_by = "launch-planning",
                                         .captures = 1,
                                         .replays = 3,
                                         .uncaptured_calls = 1,
                                         .updated_at = "2024-05-01T12:00:00.000Z"});
  const CudaGraphStatsRecord later = {.chosen_by = "launch-planning",
                                      .captures = 1,
                                      .replays = 3,
                                      .uncaptured_calls = 4,
                                      .failure = "a step of the compiled graph cannot be captured",
                                      .updated_at = "2024-05-01T12:00:05.000Z"};
  writer.recordCudaGraphStats(replayed, later);

  TraceReader reader(path);
  EXPECT_EQ(reader.cudaGraphStats(replayed), later);
  EXPECT_FALSE(reader.cudaGraphStats(launched)); // never replayed: no row
  EXPECT_EQ(queryInt(path, "SELECT count(*) FROM cuda_graph_stats"), 1);
}

TEST(TraceRoundTrip, KernelErrorIsRecordedAfterTheKernel) {
  ScratchDir dir;
  const std::string path = dir.file("trace.db");
  TraceWriter writer(path);
  int64_t compile_id =
      writer.beginCompile(writer.beginRun(sampleRun("host-a")), sampleCompile("0/0"));
  writer.recordKernel(compile_id, {.name = "k0", .kind = "generated", .target = "cpu"});
  writer.recordKernelMaxError(compile_id, "k0", 0.25);

  EXPECT_EQ(TraceReader(path).kernels(compile_id)[0].max_error, 0.25);
  EXPECT_EQ(traceErrorMessage([&] { writer.recordKernelMaxError(compile_id, "k9", 1); }),
            path + ": compile " + std::to_string(compile_id) + " has no kernel named 'k9'");
}

TEST(TraceRoundTrip, KernelBuildIsRecordedAfterTheKernel) {
  ScratchDir dir;
  const std::string path = dir.file("trace.db");
  TraceWriter writer(path);
  int64_t compile_id =
      writer.beginCompile(writer.beginRun(sampleRun("host-a")), sampleCompile("0/0"));
  writer.recordKernel(compile_id, {.name = "k0", .kind = "generated", .target = "cpu"});
  writer.recordKernel(compile_id, {.name = "k1", .kind = "generated", .target = "cpu"});
  EXPECT_EQ(TraceReader(path).kernels(compile_id)[0].cache, std::nullopt);
  writer.recordKernelBuild(compile_id, "k0", false, 640.5);
  writer.recordKernelBuild(compile_id, "k1", true, 0.25);

  std::vector<KernelRecord> kernels = TraceReader(path).kernels(compile_id);
  EXPECT_EQ(kernels[0].cache, "built");
  EXPECT_EQ(kernels[0].build_ms, 640.5);
  EXPECT_EQ(kernels[1].cache, "hit");
  EXPECT_EQ(kernels[1].build_ms, 0.25);
  EXPECT_EQ(queryInt(path, "SELECT count(*) FROM kernels WHERE cache = 'hit'"), 1);
  EXPECT_EQ(traceErrorMessage([&] { writer.recordKernelBuild(compile_id, "k9", true, 1); }),
            path + ": compile " + std::to_string(compile_id) + " has no kernel named 'k9'");
}

TEST(TraceRoundTrip, StaticDimsAreNumbersForSql) {
  ScratchDir dir;
  const std::string path = dir.file("trace.db");
  TraceWriter writer(path);
  int64_t compile_id =
      writer.beginCompile(writer.beginRun(sampleRun("host-a")), sampleCompile("0/0"));
  writer.recordPass(compile_id, samplePass("cse", 0, sampleSnapshot("forward", 1)));

  EXPECT_EQ(queryInt(path, "SELECT json_extract(shape, '$[1]') * 2 FROM snapshot_nodes"), 256);
  EXPECT_EQ(queryInt(path, "SELECT json_extract(shape, '$[0]') = 's0' FROM snapshot_nodes"), 1);
}

TEST(TraceRoundTrip, BisectionAndItsStepsReadBackEqual) {
  ScratchDir dir;
  const std::string path = dir.file("trace.db");
  BisectionRecord bisection{
      .status = "culprit_decision",
      .rtol = 1e-4,
      .atol = 1e-5,
      .injected_fault = 3,
      .first_bad_pass = "cse",
      .total_decisions = 7,
      .decision_ordinal = 3,
      .decision_pass = "cse",
      .decision_kind = "merge",
      .decision_description = "%2 = aten.add.Tensor(%x, %y) duplicates %1",
      .decision_nodes = {"2"},
      .culprit_nodes = {{.name = "2",
                         .op = "aten.add.Tensor",
                         .file = "model.py",
                         .line = 14,
                         .module_path = "encoder.fc1",
                         .fused_group = "fused_0",
                         .fused_members = {"%2 = aten.add.Tensor", "%3 = aten.relu"}}},
      .steps = {{.phase = "full", .diverged = true, .max_abs_error = 0.5, .max_rel_error = 0.25},
                {.phase = "pass", .stop_after = "cse", .diverged = true},
                {.phase = "decision",
                 .stop_after = "cse",
                 .decision_limit = 2,
                 .error_message = "output 0 has shape [2] where the reference has [3]"}},
      .created_at = "2024-05-01T10:00:00.000Z"};
  int64_t compile_id;
  {
    TraceWriter writer(path);
    compile_id = writer.beginCompile(writer.beginRun(sampleRun("host-a")), sampleCompile("0/0"));
    writer.recordBisection(compile_id, bisection);
  }
  TraceReader reader(path);
  std::vector<BisectionRow> rows = reader.bisections(compile_id);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].compile_id, compile_id);
  EXPECT_EQ(rows[0].bisection, bisection);
  EXPECT_EQ(reader.bisections(), rows);
  EXPECT_EQ(queryInt(path, "SELECT count(*) FROM bisection_steps WHERE diverged = 1"), 2);
}

TEST(TraceRoundTrip, ReductionsComeBackAsWritten) {
  ScratchDir dir;
  const std::string path = dir.file("trace.db");
  ReductionRecord reduction{.started_at = "2024-05-01T10:00:00.000Z",
                            .original_nodes = 37,
                            .reduced_nodes = 2,
                            .trials = 14,
                            .wall_ms = 9000.5,
                            .budget_exhausted = true,
                            .reduced_lir = "graph @g() -> () {\n  return\n}\n",
                            .command = "loupe run out/reduced.lir -i out/input_0.npy --compare"};
  int64_t compile_id;
  {
    TraceWriter writer(path);
    compile_id = writer.beginCompile(writer.beginRun(sampleRun("host-a")), sampleCompile("0/0"));
    writer.recordReduction(compile_id, reduction);
  }
  TraceReader reader(path);
  std::vector<ReductionRow> rows = reader.reductions(compile_id);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].compile_id, compile_id);
  EXPECT_EQ(rows[0].reduction, reduction);
  EXPECT_EQ(reader.reductions(), rows);
  EXPECT_TRUE(reader.reductions(compile_id + 1).empty());
}

TEST(TraceRoundTrip, WriterRefusesRecordsOutsideTheSchema) {
  ScratchDir dir;
  const std::string path = dir.file("trace.db");
  TraceWriter writer(path);
  int64_t run_id = writer.beginRun(sampleRun("host-a"));
  int64_t compile_id = writer.beginCompile(run_id, sampleCompile("0/0"));
  int64_t pass_id = writer.recordPass(compile_id, samplePass("cse", 0, sampleSnapshot("g", 1)));

  CompileInfo sideways = sampleCompile("0/1");
  sideways.graph_kind = "sideways";
  EXPECT_EQ(traceErrorMessage([&] { writer.beginCompile(run_id, sideways); }),
            path + ": graph kind 'sideways' is not one of: forward, backward, inference, graph");
  EXPECT_EQ(traceErrorMessage([&] { writer.finishCompile(compile_id, {.status = "running"}); }),
            path + ": compile status 'running' is not one of: ok, error, eager_fallback");
  EXPECT_EQ(traceErrorMessage([&] {
              writer.recordKernel(compile_id, {.name = "k", .kind = "magic", .target = "cpu"});
            }),
            path + ": kernel kind 'magic' is not one of: generated, library, fallback, view");
  EXPECT_EQ(traceErrorMessage([&] {
              writer.recordKernel(
                  compile_id,
                  {.name = "k", .kind = "generated", .target = "cpu", .cache = "maybe"});
            }),
            path + ": kernel cache 'maybe' is not one of: hit, built");
  EXPECT_EQ(traceErrorMessage([&] { writer.recordBisection(compile_id, {.status = "maybe"}); }),
            path + ": bisection status 'maybe' is not one of: no_divergence, culprit_decision, "
                   "culprit_pass");
  RunInfo bad_options = sampleRun("host-a");
  bad_options.options_json = "{check: yes";
  EXPECT_EQ(traceErrorMessage([&] { writer.beginRun(bad_options); }),
            path + ": run options is not valid JSON");

  // Foreign keys are enforced: a compile of a run that does not exist is refused.
  std::string orphan =
      traceErrorMessage([&] { writer.beginCompile(run_id + 100, sampleCompile("9/9")); });
  EXPECT_PRED_FORMAT2(::testing::IsSubstring, "FOREIGN KEY constraint failed", orphan);
  EXPECT_EQ(traceErrorMessage([&] { writer.recordDecision(pass_id + 100, {.ordinal = 1}); }),
            path + ": no pass with id " + std::to_string(pass_id + 100));
  // A pipeline position and a decision number are used once per compile.
  std::string twice = traceErrorMessage(
      [&] { writer.recordPass(compile_id, samplePass("dce", 0, sampleSnapshot("g", 1))); });
  EXPECT_PRED_FORMAT2(::testing::IsSubstring,
                      "UNIQUE constraint failed: passes.compile_id, passes.ordinal", twice);
  writer.recordDecision(pass_id, {.ordinal = 1, .kind = "rewrite"});
  EXPECT_THROW(writer.recordDecision(pass_id, {.ordinal = 1, .kind = "rewrite"}), TraceError);

  TraceReader reader(path);
  EXPECT_EQ(reader.compiles().size(), 1u);
  EXPECT_EQ(reader.passes(compile_id).size(), 1u);
  EXPECT_EQ(reader.decisions(compile_id).size(), 1u);
}

} // namespace
} // namespace loupe
