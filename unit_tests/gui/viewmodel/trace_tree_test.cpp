// The navigation tree a user sees on opening a trace, and the error line for files that are
// not readable traces.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include "gui/viewmodel/trace_tree.h"
#include "gui_test_support.h"
#include "inspector/trace/trace_writer.h"

namespace loupe::view {
namespace {

using testing::kSmallGraph;
using testing::kSmallGraphAfter;

CompileInfo forwardCompile(const std::string& key, int batch) {
  return CompileInfo{.compile_key = key,
                     .frame_name = "forward",
                     .frame_file = "model.py",
                     .frame_line = 12,
                     .graph_kind = "forward",
                     .input_signature_json =
                         R"([{"name": "x", "shape": [)" + std::to_string(batch) + R"(, 64]}])"};
}

PassRecord pass(const std::string& name, int ordinal, const char* lir, bool changed) {
  return PassRecord{.info = PassInfo{.name = name,
                                     .ordinal = ordinal,
                                     .wall_ms = 1.5 + ordinal,
                                     .changed = changed,
                                     .nodes_before = 5,
                                     .nodes_after = 5},
                    .snapshot = testing::snapshotOf(lir)};
}

// One run: frame `forward` compiled at batch 8 then recompiled at 16 (a failed guard), and a
// backward graph of another frame.
std::string writeTrace(const testing::ScratchDir& dir) {
  const std::string path = dir.file("t.db");
  TraceWriter writer(path);
  const int64_t run = writer.beginRun(RunInfo{.command = "python train.py"});
  const int64_t first = writer.beginCompile(run, forwardCompile("0/0", 8));
  writer.recordPass(first, pass("cse", 0, kSmallGraph, false));
  writer.recordPass(first, pass("pointwise-fusion", 1, kSmallGraphAfter, true));
  writer.finishCompile(first, CompileOutcome{.wall_ms = 12});
  const int64_t second = writer.beginCompile(run, forwardCompile("0/1", 16));
  writer.recordPass(second, pass("cse", 0, kSmallGraph, false));
  writer.recordRecompile(second, RecompileRecord{.previous_compile_key = "0/0",
                                                 .reason = "size mismatch",
                                                 .failed_guard = "L['x'].size()[0] == 8"});
  writer.finishCompile(second, CompileOutcome{.wall_ms = 10});
  const int64_t backward = writer.beginCompile(run, CompileInfo{.compile_key = "1/0",
                                                                .frame_name = "loss",
                                                                .frame_file = "model.py",
                                                                .frame_line = 40,
                                                                .graph_kind = "backward"});
  writer.finishCompile(backward,
                       CompileOutcome{.status = "error", .error_message = "boom", .wall_ms = 1});
  return path;
}

TEST(TraceTree, GroupsCompilesByFrameWithSignatureAndRecompileReason) {
  testing::ScratchDir dir;
  const OpenedTrace opened = openTrace(writeTrace(dir));
  ASSERT_TRUE(opened) << opened.error;
  ASSERT_EQ(opened.tree.runs.size(), 1u);
  const RunItem& run = opened.tree.runs[0];
  EXPECT_NE(run.label.find("python train.py"), std::string::npos);
  ASSERT_EQ(run.frames.size(), 2u);

  const FrameItem& forward = run.frames[0];
  EXPECT_EQ(forward.label, "forward (model.py:12)");
  ASSERT_EQ(forward.compiles.size(), 2u);
  EXPECT_EQ(forward.compiles[0].inputSignature, "x=[8,64]");
  EXPECT_EQ(forward.compiles[0].recompileReason, "");
  EXPECT_EQ(forward.compiles[1].inputSignature, "x=[16,64]");
  EXPECT_EQ(forward.compiles[1].recompileReason, "guard failed: L['x'].size()[0] == 8");
  EXPECT_EQ(forward.compiles[1].graphKind, "forward");

  const CompileItem& first = forward.compiles[0];
  ASSERT_EQ(first.passes.size(), 2u);
  EXPECT_EQ(first.passes[1].info.name, "pointwise-fusion");
  EXPECT_TRUE(first.passes[1].info.changed);
  EXPECT_DOUBLE_EQ(first.passes[1].info.wall_ms, 2.5);
  ASSERT_TRUE(first.passes[1].snapshotId);

  const FrameItem& loss = run.frames[1];
  ASSERT_EQ(loss.compiles.size(), 1u);
  EXPECT_EQ(loss.compiles[0].graphKind, "backward");
  EXPECT_NE(loss.compiles[0].label.find("[error]"), std::string::npos);
  EXPECT_EQ(opened.tree.findCompile(loss.compiles[0].compileId), &loss.compiles[0]);
  EXPECT_EQ(opened.tree.findCompile(999), nullptr);
}

TEST(TraceTree, LoadsAPassSnapshotWithAContentHash) {
  testing::ScratchDir dir;
  const OpenedTrace opened = openTrace(writeTrace(dir));
  ASSERT_TRUE(opened) << opened.error;
  const auto& compiles = opened.tree.runs[0].frames[0].compiles;
  const LoadedSnapshot before = loadSnapshot(*opened.reader, *compiles[0].passes[0].snapshotId);
  const LoadedSnapshot after = loadSnapshot(*opened.reader, *compiles[0].passes[1].snapshotId);
  const LoadedSnapshot again = loadSnapshot(*opened.reader, *compiles[1].passes[0].snapshotId);
  ASSERT_TRUE(before && after && again) << before.error << after.error;
  EXPECT_GE(before.model->findByName("r"), 0);
  EXPECT_EQ(after.model->findByName("r"), -1);
  EXPECT_EQ(before.hash, again.hash); // the same graph text in two compiles
  EXPECT_NE(before.hash, after.hash);
}

TEST(TraceTree, MissingSnapshotIsAnErrorLineNotAnException) {
  testing::ScratchDir dir;
  const OpenedTrace opened = openTrace(writeTrace(dir));
  ASSERT_TRUE(opened);
  const LoadedSnapshot missing = loadSnapshot(*opened.reader, 12345);
  EXPECT_FALSE(missing);
  EXPECT_NE(missing.error.find("t.db"), std::string::npos) << missing.error;
}

TEST(TraceTree, SnapshotThatDoesNotParseNamesTheFileAndSnapshot) {
  testing::ScratchDir dir;
  const std::string path = dir.file("bad.db");
  {
    TraceWriter writer(path);
    const int64_t compile = writer.beginCompile(writer.beginRun({}), forwardCompile("0/0", 8));
    writer.recordPass(compile, pass("cse", 0, "graph @f( this is not lir", false));
  }
  const OpenedTrace opened = openTrace(path);
  ASSERT_TRUE(opened) << opened.error;
  const int64_t snapshot = *opened.tree.runs[0].frames[0].compiles[0].passes[0].snapshotId;
  const LoadedSnapshot loaded = loadSnapshot(*opened.reader, snapshot);
  ASSERT_FALSE(loaded);
  EXPECT_NE(loaded.error.find("bad.db snapshot " + std::to_string(snapshot)), std::string::npos)
      << loaded.error;
  EXPECT_EQ(loaded.error.find('\n'), std::string::npos);
}

void execSql(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);
}

struct BadFile {
  const char* name;
  void (*make)(const std::string& path);
  const char* expected; // part of the message
};

const BadFile kBadFiles[] = {
    {"missing", [](const std::string&) {}, "missing.db"},
    {"garbage", [](const std::string& p) { testing::writeFile(p, std::string(4096, 'x')); },
     "garbage.db"},
    {"foreign", [](const std::string& p) { execSql(p, "CREATE TABLE users (id INTEGER);"); },
     "not a Loupe trace"},
    {"newer",
     [](const std::string& p) {
       { TraceWriter writer(p); }
       execSql(p, "PRAGMA user_version = 999;");
     },
     "newer than this Loupe"},
};

TEST(TraceTree, UnreadableFilesGiveOneErrorLineNamingTheFile) {
  testing::ScratchDir dir;
  for (const BadFile& bad : kBadFiles) {
    const std::string path = dir.file(std::string(bad.name) + ".db");
    bad.make(path);
    const OpenedTrace opened = openTrace(path);
    EXPECT_FALSE(opened) << bad.name;
    EXPECT_TRUE(opened.tree.runs.empty()) << bad.name;
    EXPECT_EQ(opened.error.rfind(path, 0), 0u) << bad.name << ": " << opened.error;
    EXPECT_NE(opened.error.find(bad.expected), std::string::npos)
        << bad.name << ": " << opened.error;
    EXPECT_EQ(opened.error.find('\n'), std::string::npos) << bad.name;
  }
}

} // namespace
} // namespace loupe::view
