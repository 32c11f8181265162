// Layouts kept in the trace: a second open lays nothing out, and a trace that cannot keep
// them still opens.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "gui/tools/graph_generator.h"
#include "gui/viewmodel/layout_cache.h"
#include "gui/viewmodel/scene_layout.h"
#include "gui/viewmodel/trace_tree.h"
#include "gui_test_support.h"
#include "inspector/trace/trace_schema.h"
#include "inspector/trace/trace_writer.h"

namespace loupe::view {
namespace {

int64_t queryInt(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* stmt = nullptr;
  sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr);
  const int64_t value = sqlite3_step(stmt) == SQLITE_ROW ? sqlite3_column_int64(stmt, 0) : -1;
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return value;
}

void execSql(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);
}

// A trace with one compile of a generated graph; returns its path.
std::string writeGeneratedTrace(const std::string& path) {
  TraceWriter writer(path);
  const int64_t compile = writer.beginCompile(writer.beginRun({}), {.compile_key = "0/0"});
  for (const PassRecord& pass : generatedPasses(400))
    writer.recordPass(compile, pass);
  return path;
}

// Writes at `path` the rows of the trace at `current` as a trace of schema `version`: the
// migrations up to `version` build the old schema (and its rows, which are kept) and every
// column it shares with the current one is copied over. Returns `path`.
std::string rewriteAtVersion(const std::string& current, const std::string& path, int version) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  const auto exec = [db](const std::string& sql) {
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
        << sqlite3_errmsg(db) << " in " << sql;
  };
  for (int applied = 0; applied < version; ++applied)
    exec(schemaMigrations()[static_cast<size_t>(applied)]);
  exec("PRAGMA user_version = " + std::to_string(version));
  exec("ATTACH DATABASE '" + current + "' AS current");
  // One INSERT ... SELECT per old table, naming the columns both schemas have.
  sqlite3_stmt* stmt = nullptr;
  sqlite3_prepare_v2(db, R"sql(
    SELECT old.name, group_concat('"' || old_column.name || '"')
    FROM main.sqlite_master AS old
    JOIN pragma_table_info(old.name, 'main') AS old_column
    JOIN pragma_table_info(old.name, 'current') AS current_column
      ON current_column.name = old_column.name
    WHERE old.type = 'table'
    GROUP BY old.name)sql",
                     -1, &stmt, nullptr);
  std::vector<std::string> copies;
  while (sqlite3_step(stmt) == SQLITE_ROW) {
    const std::string table = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    const std::string columns = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 1));
    copies.push_back("INSERT OR IGNORE INTO main.\"" + table + "\" (" + columns + ") SELECT " +
                     columns + " FROM current.\"" + table + "\"");
  }
  sqlite3_finalize(stmt);
  for (const std::string& copy : copies)
    exec(copy);
  exec("DETACH DATABASE current");
  sqlite3_close(db);
  return path;
}

LoadedSnapshot finalSnapshot(const OpenedTrace& opened) {
  return loadSnapshot(*opened.reader,
                      *opened.tree.runs[0].frames[0].compiles[0].passes.back().snapshotId);
}

// Opens the trace as the viewer does and lays out the snapshot's default view.
struct Opened {
  explicit Opened(const std::string& path)
      : trace(openTrace(path)), snapshot(finalSnapshot(trace)) {
    layouter = std::make_unique<SceneLayouter>(snapshot.model, LayoutOptions{},
                                               std::make_shared<LayoutCache>(path), snapshot.hash);
    scene = layouter->layout(defaultExpansion(layouter->tree()));
  }
  OpenedTrace trace;
  LoadedSnapshot snapshot;
  std::unique_ptr<SceneLayouter> layouter;
  Scene scene;
};

void expectSameScene(const Scene& a, const Scene& b) {
  ASSERT_EQ(a.items.size(), b.items.size());
  for (size_t i = 0; i < a.items.size(); ++i)
    EXPECT_EQ(a.items[i].rect, b.items[i].rect);
  ASSERT_EQ(a.edges.size(), b.edges.size());
  for (size_t i = 0; i < a.edges.size(); ++i)
    EXPECT_EQ(a.edges[i].spline, b.edges[i].spline);
  EXPECT_EQ(a.bounds, b.bounds);
}

TEST(LayoutCache, BlobRoundTripsALayout) {
  const auto model = testing::parse(testing::kSmallGraphAfter);
  const GraphLayout layout = layoutGraph(*model);
  const std::optional<GraphLayout> back = deserialiseLayout(serialiseLayout(layout));
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, layout);
}

TEST(LayoutCache, DamagedBlobsAreMissesNotCrashes) {
  const std::string blob = serialiseLayout(layoutGraph(*testing::parse(testing::kSmallGraph)));
  EXPECT_FALSE(deserialiseLayout(""));
  EXPECT_FALSE(deserialiseLayout("LVL0" + blob.substr(4)));
  for (size_t cut : {size_t{5}, blob.size() / 2, blob.size() - 1})
    EXPECT_FALSE(deserialiseLayout(blob.substr(0, cut))) << cut;
  EXPECT_FALSE(deserialiseLayout(blob + "x"));
  std::string huge = blob;
  huge.replace(4 + 16, 4, "\xff\xff\xff\x7f"); // the box count
  EXPECT_FALSE(deserialiseLayout(huge));
}

TEST(LayoutCache, SecondOpenLaysNothingOutAndGetsTheSameLayout) {
  testing::ScratchDir dir;
  const std::string path = writeGeneratedTrace(dir.file("g.db"));
  const Opened first(path);
  ASSERT_TRUE(first.snapshot) << first.snapshot.error;
  EXPECT_GT(first.layouter->graphvizRuns(), 0);
  EXPECT_GT(queryInt(path, "SELECT count(*) FROM layout_cache"), 0);

  const Opened second(path);
  EXPECT_EQ(second.layouter->graphvizRuns(), 0);
  expectSameScene(first.scene, second.scene);
}

TEST(LayoutCache, DifferentOptionsOrExpansionAreDifferentEntries) {
  const auto model = testing::parse(generateGraphLir(100, GeneratedStage::Fused));
  auto cache = std::make_shared<LayoutCache>();
  SceneLayouter a(model, {}, cache, "h");
  a.layout({"model"});
  LayoutOptions wide;
  wide.charWidth = 9;
  SceneLayouter b(model, wide, cache, "h");
  b.layout({"model"});
  EXPECT_EQ(b.graphvizRuns(), a.graphvizRuns()); // nothing reused across font metrics
  SceneLayouter c(model, {}, cache, "h");
  c.layout({"model"});
  EXPECT_EQ(c.graphvizRuns(), 0);
  c.layout({"model", "model.layers"});
  EXPECT_EQ(c.graphvizRuns(), 3); // layers is new; model and the root change size
}

TEST(LayoutCache, OlderTraceIsUpgradedToKeepLayouts) {
  testing::ScratchDir dir;
  // Version 4 is the last one without the cache.
  const std::string path =
      rewriteAtVersion(writeGeneratedTrace(dir.file("current.db")), dir.file("old.db"), 4);
  const Opened first(path);
  EXPECT_GT(first.layouter->graphvizRuns(), 0);
  EXPECT_EQ(queryInt(path, "PRAGMA user_version"), latestSchemaVersion());
  EXPECT_EQ(Opened(path).layouter->graphvizRuns(), 0);
}

TEST(LayoutCache, TraceThatCannotBeWrittenJustHasNoCache) {
  testing::ScratchDir dir;
  const std::string path = writeGeneratedTrace(dir.file("ro.db"));
  std::filesystem::permissions(path, std::filesystem::perms::owner_read |
                                         std::filesystem::perms::group_read);
  if (access(path.c_str(), W_OK) == 0)
    GTEST_SKIP() << "running as a user who can write read-only files (root)";
  const Opened first(path);
  ASSERT_TRUE(first.trace) << first.trace.error;
  EXPECT_GT(first.layouter->graphvizRuns(), 0);
  EXPECT_GT(Opened(path).layouter->graphvizRuns(), 0);
}

TEST(LayoutCache, FileThatIsNotATraceKeepsNothingAndRaisesNothing) {
  testing::ScratchDir dir;
  const std::string path = dir.file("foreign.db");
  execSql(path, "CREATE TABLE users (id INTEGER);");
  LayoutCache cache(path);
  const GraphLayout layout = layoutGraph(*testing::parse(testing::kSmallGraph));
  cache.store("h", "k", layout);
  EXPECT_EQ(queryInt(path, "SELECT count(*) FROM sqlite_master WHERE name = 'layout_cache'"), 0);
  EXPECT_FALSE(LayoutCache(path).load("h", "k"));
  EXPECT_TRUE(cache.load("h", "k")); // still remembered for this session
}

} // namespace
} // namespace loupe::view
