// The reader never writes the file, never runs anything stored in it, and names what is
// missing when asked for something the trace does not have.

#include "inspector/trace/trace_error.h"
#include "inspector/trace/trace_reader.h"
#include "inspector/trace/trace_schema.h"
#include "inspector/trace/trace_writer.h"
#include "trace_test_support.h"

#include <gtest/gtest.h>

namespace loupe {
namespace {

using testing::createTraceAtVersion;
using testing::execSql;
using testing::queryInt;
using testing::readFile;
using testing::sampleCompile;
using testing::samplePass;
using testing::sampleRun;
using testing::sampleSnapshot;
using testing::ScratchDir;
using testing::traceErrorMessage;

// Calls every query of the reader on every run and compile.
void readEverything(const TraceReader& reader) {
  reader.summary();
  for (const RunRow& run : reader.runs()) {
    reader.graphBreaks(run.id);
    reader.warnings(run.id);
  }
  for (const CompileRow& compile : reader.compiles()) {
    reader.compile(compile.id);
    for (const PassRow& pass : reader.passes(compile.id)) {
      if (pass.snapshot_id) reader.snapshot(*pass.snapshot_id);
    }
    reader.decisions(compile.id);
    reader.kernels(compile.id);
    reader.buffers(compile.id);
    reader.memoryPlan(compile.id);
    reader.memoryLayouts(compile.id);
    reader.kernelStats(compile.id);
    reader.runErrors(compile.id);
    reader.guards(compile.id);
    reader.recompiles(compile.id);
    reader.bisections(compile.id);
  }
}

// A closed trace with one compile (id 1) that went through cse, fuse, cse.
void writeSmallTrace(const std::string& path) {
  TraceWriter writer(path);
  int64_t run_id = writer.beginRun(sampleRun("host-a"));
  int64_t compile_id = writer.beginCompile(run_id, sampleCompile("0/0"));
  writer.recordPass(compile_id, samplePass("cse", 0, sampleSnapshot("first_cse", 3)));
  writer.recordPass(compile_id, samplePass("fuse", 1, sampleSnapshot("fused", 2)));
  writer.recordPass(compile_id, samplePass("cse", 2, sampleSnapshot("second_cse", 2)));
  writer.recordKernel(compile_id, {.name = "k0", .kind = "generated", .target = "cpu"});
  writer.recordGuard(compile_id, {.kind = "TENSOR_MATCH", .expr = "check_tensor(L['x'])"});
  writer.recordWarning(run_id, {.message = "slow path"});
  writer.recordMemoryLayout(compile_id, {.bindings = {{"s0", 2}}, .offsets = {{"3", 0}}});
  writer.finishCompile(compile_id, {.status = "ok", .wall_ms = 1});
}

TEST(TraceReader, ReadingLeavesTheFileUntouched) {
  ScratchDir dir;
  const std::string path = dir.file("trace.db");
  writeSmallTrace(path);
  const std::string bytes = readFile(path);
  const auto modified = std::filesystem::last_write_time(path);

  readEverything(TraceReader(path));

  EXPECT_EQ(readFile(path), bytes);
  EXPECT_EQ(std::filesystem::last_write_time(path), modified);
  // Nor does it leave sqlite side files next to a closed trace.
  EXPECT_FALSE(std::filesystem::exists(path + "-wal"));
  EXPECT_FALSE(std::filesystem::exists(path + "-shm"));
}

TEST(TraceReader, OlderVersionsAreReadWithoutUpgradingTheFile) {
  for (int version = 1; version < latestSchemaVersion(); ++version) {
    SCOPED_TRACE("schema version " + std::to_string(version));
    ScratchDir dir;
    const std::string path = dir.file("old.db");
    createTraceAtVersion(path, version);
    const std::string bytes = readFile(path);

    TraceReader reader(path);
    EXPECT_EQ(reader.fileSchemaVersion(), version);
    ASSERT_EQ(reader.runs().size(), 1u);
    EXPECT_EQ(reader.runs()[0].info.host, "old-host");
    EXPECT_TRUE(reader.decisions(1).empty());
    EXPECT_TRUE(reader.bisections().empty());
    readEverything(reader);

    EXPECT_EQ(readFile(path), bytes);
    EXPECT_EQ(queryInt(path, "PRAGMA user_version"), version);
  }
}

TEST(TraceReader, SeesWhatALiveWriterCommits) {
  ScratchDir dir;
  const std::string path = dir.file("trace.db");
  TraceWriter writer(path);
  int64_t run_id = writer.beginRun(sampleRun("host-a"));
  TraceReader reader(path);
  EXPECT_TRUE(reader.compiles().empty());

  int64_t compile_id = writer.beginCompile(run_id, sampleCompile("0/0"));
  writer.recordPass(compile_id, samplePass("cse", 0, sampleSnapshot("g", 2)));
  EXPECT_EQ(reader.compiles().size(), 1u);
  EXPECT_EQ(reader.passes(compile_id).size(), 1u);
}

TEST(TraceReader, SnapshotAfterPassTakesThatPassesLastRun) {
  ScratchDir dir;
  const std::string path = dir.file("trace.db");
  writeSmallTrace(path);
  TraceReader reader(path);
  EXPECT_EQ(reader.snapshotAfterPass(1, "cse"), sampleSnapshot("second_cse", 2));
  EXPECT_EQ(reader.snapshotAfterPass(1, "fuse"), sampleSnapshot("fused", 2));
}

TEST(TraceReader, SnapshotAfterAMissingPassListsTheCompilesPasses) {
  ScratchDir dir;
  const std::string path = dir.file("trace.db");
  writeSmallTrace(path);
  TraceReader reader(path);
  EXPECT_EQ(traceErrorMessage([&] { reader.snapshotAfterPass(1, "dce"); }),
            path + ": compile 1 has no pass named 'dce'; its passes: cse, fuse");
  EXPECT_EQ(traceErrorMessage([&] { reader.snapshotAfterPass(7, "cse"); }),
            path + ": compile 7 has no pass named 'cse'; it has no passes recorded");
}

TEST(TraceReader, SnapshotAfterAFailedPassSaysItLeftNone) {
  ScratchDir dir;
  const std::string path = dir.file("trace.db");
  {
    TraceWriter writer(path);
    int64_t compile_id =
        writer.beginCompile(writer.beginRun(sampleRun("host-a")), sampleCompile("0/0"));
    writer.recordPass(
        compile_id,
        {.info = {.name = "fuse", .ordinal = 0, .status = "failed", .error_message = "cycle"}});
  }
  EXPECT_EQ(traceErrorMessage([&] { TraceReader(path).snapshotAfterPass(1, "fuse"); }),
            path + ": pass 'fuse' (ordinal 0) of compile 1 left no snapshot (status failed)");
}

TEST(TraceReader, UnknownIdsAreErrors) {
  ScratchDir dir;
  const std::string path = dir.file("trace.db");
  writeSmallTrace(path);
  TraceReader reader(path);
  EXPECT_EQ(traceErrorMessage([&] { reader.compile(99); }), path + ": no compile with id 99");
  EXPECT_EQ(traceErrorMessage([&] { reader.snapshot(99); }), path + ": no snapshot with id 99");
}

TEST(TraceReader, StoredTriggersAndViewsNeverRun) {
  ScratchDir dir;
  const std::string path = dir.file("trace.db");
  writeSmallTrace(path);
  // What a hostile trace could carry: a trigger on the writer's inserts, and a view in
  // place of a table the reader queries.
  execSql(path, R"sql(
    CREATE TABLE pwned (x);
    CREATE TRIGGER on_run AFTER INSERT ON runs BEGIN INSERT INTO pwned VALUES (1); END;
    DROP TABLE guards;
    CREATE VIEW guards AS SELECT 1 AS compile_id, 'k' AS kind, 'e' AS expr, '[]' AS user_stack,
                                 0 AS failed;
  )sql");

  TraceWriter(path).beginRun(sampleRun("host-b"));
  EXPECT_EQ(queryInt(path, "SELECT count(*) FROM pwned"), 0);
  std::string message = traceErrorMessage([&] { TraceReader(path).guards(1); });
  EXPECT_PRED_FORMAT2(::testing::IsSubstring, "guards", message);
}

TEST(TraceReader, MalformedJsonIsATraceErrorNamingTheColumn) {
  ScratchDir dir;
  const std::string path = dir.file("trace.db");
  writeSmallTrace(path);
  TraceReader reader(path);

  execSql(path, "UPDATE guards SET user_stack = '[{\"file\": 3'");
  std::string unparsable = traceErrorMessage([&] { reader.guards(1); });
  EXPECT_TRUE(unparsable.starts_with(path + ": malformed JSON in column user_stack")) << unparsable;

  execSql(path, "UPDATE guards SET user_stack = '[{\"file\": 3}]'");
  std::string mistyped = traceErrorMessage([&] { reader.guards(1); });
  EXPECT_TRUE(mistyped.starts_with(path + ": malformed JSON in column user_stack")) << mistyped;

  execSql(path, R"sql(UPDATE guards SET user_stack =
                        '[{"file": "a.py", "line": 1e300, "function": "f", "code": ""}]')sql");
  std::string out_of_range = traceErrorMessage([&] { reader.guards(1); });
  EXPECT_TRUE(out_of_range.starts_with(path + ": malformed JSON in column user_stack"))
      << out_of_range;

  execSql(path, R"sql(UPDATE memory_layouts SET offsets = '{"3": 1.5}')sql");
  std::string fraction = traceErrorMessage([&] { reader.memoryLayouts(1); });
  EXPECT_TRUE(fraction.starts_with(path + ": malformed JSON in column offsets")) << fraction;
}

} // namespace
} // namespace loupe
