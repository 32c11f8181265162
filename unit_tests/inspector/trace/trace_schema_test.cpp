// Which files the store accepts: its own traces at any known version (older ones are
// migrated), and clear errors for newer, foreign, random, corrupt and missing files.

#include "inspector/trace/trace_error.h"
#include "inspector/trace/trace_reader.h"
#include "inspector/trace/trace_schema.h"
#include "inspector/trace/trace_writer.h"
#include "trace_test_support.h"

#include <gtest/gtest.h>

#include <random>

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
using testing::writeFile;

TEST(TraceSchema, NewFileIsCreatedAtTheLatestVersionInWalModeUntilClosed) {
  ScratchDir dir;
  const std::string path = dir.file("trace.db");
  const char* wal_mode = "SELECT count(*) FROM pragma_journal_mode WHERE journal_mode = 'wal'";
  {
    TraceWriter writer(path);
    writer.beginRun(sampleRun("host-a"));
    EXPECT_EQ(queryInt(path, "PRAGMA user_version"), latestSchemaVersion());
    EXPECT_EQ(
        queryInt(path, "SELECT count(*) FROM meta WHERE key = 'format' AND value = 'loupe-trace'"),
        1);
    EXPECT_EQ(queryInt(path, wal_mode), 1);
  }
  EXPECT_EQ(queryInt(path, wal_mode), 0);
  EXPECT_FALSE(std::filesystem::exists(path + "-wal"));
}

TEST(TraceSchema, WriterUpgradesEveryOlderVersionKeepingItsRows) {
  for (int version = 1; version < latestSchemaVersion(); ++version) {
    SCOPED_TRACE("from schema version " + std::to_string(version));
    ScratchDir dir;
    const std::string path = dir.file("old.db");
    createTraceAtVersion(path, version);
    {
      TraceWriter writer(path);
      // The upgraded file takes what only the latest schema has.
      int64_t pass_id = writer.recordPass(1, samplePass("cse", 0, sampleSnapshot("g", 2)));
      writer.recordDecision(pass_id, {.ordinal = 1,
                                      .kind = "rewrite",
                                      .description = "x+0 -> x",
                                      .rule_file = "passes/algebraic_simplification.cpp",
                                      .rule_line = 170});
      writer.recordKernel(1,
                          {.name = "k0", .kind = "generated", .target = "cpu", .max_error = 0.5});
      writer.recordKernelBuild(1, "k0", true, 1.5);
      writer.recordBisection(1, {.status = "culprit_decision", .decision_ordinal = 1});
      writer.recordKernelStats(1, {{.kernel = "k0", .calls = 2, .total_ms = 1}});
      writer.recordMemoryLayout(1, {.bindings = {{"s0", 4}}, .peak_bytes = 64});
      writer.recordReduction(1, {.original_nodes = 30, .reduced_nodes = 2, .command = "loupe run"});
      writer.recordTracedLines(1, {{.file = "m.py", .line = 3, .function = "f"},
                                   {.file = "m.py", .line = 4, .function = "f"}});
    }
    EXPECT_EQ(queryInt(path, "PRAGMA user_version"), latestSchemaVersion());

    TraceReader reader(path);
    EXPECT_EQ(reader.fileSchemaVersion(), latestSchemaVersion());
    ASSERT_EQ(reader.runs().size(), 1u);
    EXPECT_EQ(reader.runs()[0].info.host, "old-host");
    EXPECT_EQ(reader.compile(1).info.compile_key, "0/0");
    ASSERT_EQ(reader.decisions(1).size(), 1u);
    EXPECT_EQ(reader.decisions(1)[0].decision.rule_file, "passes/algebraic_simplification.cpp");
    EXPECT_EQ(reader.decisions(1)[0].decision.rule_line, 170);
    EXPECT_EQ(reader.passes(1).at(0).info.plan_changed, false);
    EXPECT_EQ(reader.kernels(1)[0].max_error, 0.5);
    EXPECT_EQ(reader.kernels(1)[0].cache, "hit");
    EXPECT_EQ(reader.kernels(1)[0].build_ms, 1.5);
    ASSERT_EQ(reader.bisections(1).size(), 1u);
    EXPECT_EQ(reader.bisections(1)[0].bisection.decision_ordinal, 1);
    EXPECT_EQ(reader.kernelStats(1).at(0).calls, 2);
    EXPECT_EQ(reader.kernelStats(1).at(0).profile_ms, std::nullopt); // written unprofiled
    EXPECT_EQ(reader.memoryLayouts(1).at(0).peak_bytes, 64);
    ASSERT_EQ(reader.reductions(1).size(), 1u);
    EXPECT_EQ(reader.reductions(1)[0].reduction.reduced_nodes, 2);
    ASSERT_EQ(reader.tracedLines(1).size(), 2u);
    EXPECT_EQ(reader.tracedLines(1)[1].line, 4);
  }
}

// Kernel stats an older Loupe wrote (v8 to v13) read as not profiled: every profile column null.
TEST(TraceSchema, OlderKernelStatsReadAsNotProfiled) {
  for (int version = 8; version < 14; ++version) {
    SCOPED_TRACE("from schema version " + std::to_string(version));
    ScratchDir dir;
    const std::string path = dir.file("old.db");
    createTraceAtVersion(path, version);
    execSql(path, R"sql(
      INSERT INTO kernel_stats (compile_id, kernel, implementation, calls, total_ms, scratch_bytes)
      VALUES (1, 'k0', 'library:aten.mm', 3, 1.5, 0);
    )sql");
    auto expectUnprofiled = [](const TraceReader& reader) {
      ASSERT_EQ(reader.kernelStats(1).size(), 1u);
      const KernelStatsRecord k = reader.kernelStats(1)[0];
      EXPECT_EQ(k.calls, 3);
      EXPECT_FALSE(k.profile_ms || k.profile_runs || k.bytes || k.flops || k.peak_fraction ||
                   k.bound);
    };
    expectUnprofiled(TraceReader(path)); // a private upgrade in memory
    { TraceWriter writer(path); }        // the file itself upgraded
    expectUnprofiled(TraceReader(path));
  }
}

// Rows an older Loupe wrote get the version-6 columns' defaults: no plan change, no rule.
TEST(TraceSchema, OlderPassesAndDecisionsReadWithoutPlanChangeOrRule) {
  for (int version = 2; version < 6; ++version) {
    SCOPED_TRACE("from schema version " + std::to_string(version));
    ScratchDir dir;
    const std::string path = dir.file("old.db");
    createTraceAtVersion(path, version);
    execSql(path, R"sql(
      INSERT INTO passes (id, compile_id, ordinal, name, wall_ms, changed, nodes_before,
                          nodes_after, decisions, status)
      VALUES (1, 1, 0, 'memory-planning', 0.5, 1, 3, 3, 1, 'ok');
      INSERT INTO decisions (compile_id, pass_id, ordinal, kind, description, nodes, applied)
      VALUES (1, 1, 1, 'erase', '%3 is unused', '["3"]', 1);
    )sql");
    auto expectOldRows = [](const TraceReader& reader) {
      ASSERT_EQ(reader.passes(1).size(), 1u);
      EXPECT_TRUE(reader.passes(1)[0].info.changed);
      EXPECT_FALSE(reader.passes(1)[0].info.plan_changed);
      ASSERT_EQ(reader.decisions(1).size(), 1u);
      EXPECT_EQ(reader.decisions(1)[0].decision.description, "%3 is unused");
      EXPECT_EQ(reader.decisions(1)[0].decision.rule_file, std::nullopt);
      EXPECT_EQ(reader.decisions(1)[0].decision.rule_line, std::nullopt);
    };
    expectOldRows(TraceReader(path)); // a private upgrade in memory
    { TraceWriter writer(path); }     // the file itself upgraded
    EXPECT_EQ(queryInt(path, "PRAGMA user_version"), latestSchemaVersion());
    expectOldRows(TraceReader(path));
  }
}

TEST(TraceSchema, NewerSchemaIsRefusedByWriterAndReader) {
  ScratchDir dir;
  const std::string path = dir.file("trace.db");
  { TraceWriter writer(path); }
  const int newer = latestSchemaVersion() + 1;
  execSql(path, ("PRAGMA user_version = " + std::to_string(newer)).c_str());

  const std::string expected = path + ": schema version " + std::to_string(newer) +
                               " is newer than this Loupe understands (" +
                               std::to_string(latestSchemaVersion()) + "); upgrade Loupe";
  EXPECT_EQ(traceErrorMessage([&] { TraceWriter writer(path); }), expected);
  EXPECT_EQ(traceErrorMessage([&] { TraceReader reader(path); }), expected);
}

TEST(TraceSchema, ForeignSqliteFileIsRefusedAndLeftUntouched) {
  ScratchDir dir;
  const std::string path = dir.file("app.db");
  execSql(path, "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT);"
                "INSERT INTO users VALUES (1, 'ada');");
  const std::string before = readFile(path);

  const std::string expected =
      path + ": not a Loupe trace (it has no meta table with format 'loupe-trace')";
  EXPECT_EQ(traceErrorMessage([&] { TraceWriter writer(path); }), expected);
  EXPECT_EQ(traceErrorMessage([&] { TraceReader reader(path); }), expected);
  EXPECT_EQ(readFile(path), before);
}

TEST(TraceSchema, NonSqliteFilesAreRefusedAndLeftUntouched) {
  ScratchDir dir;
  std::mt19937 random(7);
  std::string noise(64 * 1024, '\0');
  for (char& byte : noise)
    byte = static_cast<char>(random());
  for (std::string_view content : {std::string_view(noise), std::string_view("hello\n")}) {
    const std::string path = dir.file("notes.db");
    writeFile(path, content);
    const std::string expected = path + ": not a Loupe trace (not an sqlite database)";
    EXPECT_EQ(traceErrorMessage([&] { TraceWriter writer(path); }), expected);
    EXPECT_EQ(traceErrorMessage([&] { TraceReader reader(path); }), expected);
    EXPECT_EQ(readFile(path), content);
  }
}

TEST(TraceSchema, CorruptTraceIsATraceErrorNotACrash) {
  ScratchDir dir;
  const std::string path = dir.file("trace.db");
  {
    TraceWriter writer(path);
    int64_t compile_id =
        writer.beginCompile(writer.beginRun(sampleRun("host-a")), sampleCompile("0/0"));
    for (int ordinal = 0; ordinal < 40; ++ordinal) {
      writer.recordPass(compile_id, samplePass("pass", ordinal,
                                               sampleSnapshot("g" + std::to_string(ordinal), 30)));
    }
  }
  // Overwrite every page but the first (which holds the schema) and the last.
  std::string bytes = readFile(path);
  const size_t page_size = static_cast<size_t>(queryInt(path, "PRAGMA page_size"));
  ASSERT_GT(bytes.size(), 8 * page_size);
  std::mt19937 random(11);
  for (size_t offset = page_size; offset < bytes.size() - page_size; ++offset) {
    bytes[offset] = static_cast<char>(random());
  }
  writeFile(path, bytes);

  std::string message = traceErrorMessage([&] {
    TraceReader reader(path);
    reader.summary();
    for (const CompileRow& compile : reader.compiles()) {
      for (const PassRow& pass : reader.passes(compile.id)) {
        if (pass.snapshot_id) reader.snapshot(*pass.snapshot_id);
      }
    }
  });
  EXPECT_EQ(message, path + ": the trace file is corrupt (database disk image is malformed)");
  EXPECT_THROW(
      {
        TraceWriter writer(path);
        int64_t compile_id =
            writer.beginCompile(writer.beginRun(sampleRun("host-b")), sampleCompile("1/0"));
        writer.recordPass(compile_id, samplePass("pass", 0, sampleSnapshot("g0", 30)));
      },
      TraceError);
}

TEST(TraceSchema, MissingFileIsNamedAndNotCreatedByTheReader) {
  ScratchDir dir;
  const std::string path = dir.file("absent.db");
  EXPECT_EQ(traceErrorMessage([&] { TraceReader reader(path); }), path + ": no such file");
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(TraceSchema, EmptyFileIsNoTraceForTheReaderButANewOneForTheWriter) {
  ScratchDir dir;
  const std::string path = dir.file("empty.db");
  writeFile(path, "");
  EXPECT_EQ(traceErrorMessage([&] { TraceReader reader(path); }),
            path + ": not a Loupe trace (the database is empty)");
  { TraceWriter writer(path); }
  EXPECT_EQ(TraceReader(path).fileSchemaVersion(), latestSchemaVersion());
}

} // namespace
} // namespace loupe
