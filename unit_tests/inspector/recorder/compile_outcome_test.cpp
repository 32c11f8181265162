// A compile's end as the trace keeps it, from the driver's result: "ok" with the wall time, or
// the caller's failure status with the error and the failed pass; an input rejected at import
// is kept as the failed "import" pass. The run record names this process.
#include <gtest/gtest.h>

#include <unistd.h>

#include "driver/compile_graph.h"
#include "inspector/recorder/run_info.h"
#include "inspector/recorder/trace_recorder.h"
#include "inspector/trace/trace_reader.h"
#include "inspector/trace/trace_writer.h"
#include "passes/pipeline.h"
#include "unit_tests/support/scratch_dir.h"

namespace loupe::testing {
namespace {

constexpr const char* kGraph = R"lir(
graph @model(%x: f32[4]) -> (f32[4]) {
  %0 = aten.relu(%x) : f32[4]
  return %0
}
)lir";

// Compiles `lir` with the default pipeline into a fresh compile of `trace`, ends the compile
// (a failure as "eager_fallback") and returns its id.
int64_t compileInto(const std::string& trace, std::string_view lir,
                    const std::string& target = "cpu") {
  TraceWriter writer(trace);
  int64_t runId = writer.beginRun(thisProcessRun("test"));
  int64_t compileId = writer.beginCompile(runId, CompileInfo{});
  TraceRecorder recorder(writer, compileId);
  CompileOptions options;
  options.pipeline = defaultPipeline();
  options.pipelineOptions.target = target;
  options.instrumentation.push_back(&recorder);
  recorder.finishCompile(compileGraph(lir, "model.lir", options), "eager_fallback", lir);
  return compileId;
}

TEST(CompileOutcome, OkCompileKeepsItsWallTime) {
  ScratchDir dir;
  int64_t id = compileInto(dir.file("t.db"), kGraph);
  CompileOutcome outcome = TraceReader(dir.file("t.db")).compile(id).outcome;
  EXPECT_EQ(outcome.status, "ok");
  EXPECT_FALSE(outcome.error_message.has_value());
  EXPECT_FALSE(outcome.error_pass.has_value());
  ASSERT_TRUE(outcome.wall_ms.has_value());
  EXPECT_GT(*outcome.wall_ms, 0);
}

TEST(CompileOutcome, FailedPassIsNamedWithTheError) {
  ScratchDir dir;
  int64_t id = compileInto(dir.file("t.db"), kGraph, "abacus");
  TraceReader reader(dir.file("t.db"));
  CompileOutcome outcome = reader.compile(id).outcome;
  EXPECT_EQ(outcome.status, "eager_fallback");
  EXPECT_EQ(outcome.error_pass, "kernel-selection");
  ASSERT_TRUE(outcome.error_message.has_value());
  EXPECT_NE(outcome.error_message->find("unknown target 'abacus'"), std::string::npos);
  EXPECT_EQ(reader.passes(id).back().info.status, "failed"); // recorded by the instrumentation
}

TEST(CompileOutcome, RejectedInputIsTheFailedImportPass) {
  ScratchDir dir;
  std::string unparsable = "graph @model(%x: f32[4]";
  int64_t id = compileInto(dir.file("t.db"), unparsable);
  TraceReader reader(dir.file("t.db"));
  CompileOutcome outcome = reader.compile(id).outcome;
  EXPECT_EQ(outcome.status, "eager_fallback");
  EXPECT_EQ(outcome.error_pass, "import");
  std::vector<PassRow> passes = reader.passes(id);
  ASSERT_EQ(passes.size(), 1u);
  EXPECT_EQ(passes[0].info.name, "import");
  EXPECT_EQ(passes[0].info.error_message, outcome.error_message);
  ASSERT_TRUE(passes[0].snapshot_id.has_value());
  EXPECT_EQ(reader.snapshot(*passes[0].snapshot_id).lir, unparsable); // the text as given
}

TEST(RunInfo, NamesThisProcess) {
  RunInfo run = thisProcessRun("loupe run x.lir", "2.11", R"({"check": true})");
  EXPECT_EQ(run.pid, static_cast<int64_t>(getpid()));
  EXPECT_EQ(run.command, "loupe run x.lir");
  EXPECT_EQ(run.torch_version, "2.11");
  EXPECT_FALSE(run.loupe_version.empty());
  EXPECT_EQ(run.options_json, R"({"check": true})");
  EXPECT_EQ(thisProcessRun("loupe bisect x.lir").options_json, "{}");
}

} // namespace
} // namespace loupe::testing
