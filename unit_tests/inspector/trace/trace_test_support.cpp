#include "trace_test_support.h"

#include "inspector/trace/sqlite_db.h"
#include "inspector/trace/trace_error.h"
#include "inspector/trace/trace_schema.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

namespace loupe::testing {

RunInfo sampleRun(std::string_view host) {
  return RunInfo{.started_at = "2024-05-01T12:00:00.000Z",
                 .pid = 4242,
                 .host = std::string(host),
                 .command = "python train.py --batch 8",
                 .torch_version = "2.3.0",
                 .loupe_version = "0.1.0",
                 .options_json = R"({"check":true,"bisect_limit":null})"};
}

CompileInfo sampleCompile(std::string_view compile_key) {
  return CompileInfo{.compile_key = std::string(compile_key),
                     .frame_name = "forward",
                     .frame_file = "/home/me/mlp.py",
                     .frame_line = 12,
                     .graph_kind = "forward",
                     .input_signature_json = R"([{"dtype":"f32","shape":["s0",128]}])",
                     .started_at = "2024-05-01T12:00:01.000Z"};
}

SnapshotRecord sampleSnapshot(std::string_view graph_name, int node_count) {
  SnapshotRecord snapshot;
  snapshot.lir = "graph @" + std::string(graph_name) + "(%x: f32[s0,128]) -> (f32[s0,128]) {\n";
  std::string previous = "x";
  for (int index = 0; index < node_count; ++index) {
    std::string name = std::to_string(index);
    snapshot.lir += "  %" + name + " = aten.relu(%" + previous + ") : f32[s0,128]\n";
    snapshot.nodes.push_back(
        NodeRecord{.name = name,
                   .op = "aten.relu",
                   .result_types = "f32[s0,128]",
                   .dtype = "f32",
                   .shape = std::vector<std::string>{"s0", "128"},
                   .file = "/home/me/mlp.py",
                   .line = 14 + index,
                   .module_path = "encoder.act",
                   .fused_group = index > 0 ? std::optional<std::string>("g0") : std::nullopt,
                   .kernel = index > 0 ? std::optional<std::string>("k0") : std::nullopt});
    previous = name;
  }
  snapshot.lir += "  return %" + previous + "\n}\n";
  return snapshot;
}

PassRecord samplePass(std::string_view name, int ordinal, SnapshotRecord snapshot) {
  auto node_count = static_cast<int64_t>(snapshot.nodes.size());
  return PassRecord{.info = {.name = std::string(name),
                             .ordinal = ordinal,
                             .wall_ms = 0.25 * ordinal,
                             .changed = ordinal % 2 == 0,
                             .plan_changed = ordinal % 3 == 2,
                             .nodes_before = node_count + 1,
                             .nodes_after = node_count,
                             .decisions = 1,
                             .status = "ok",
                             .error_message = std::nullopt},
                    .snapshot = std::move(snapshot)};
}

std::string traceErrorMessage(const std::function<void()>& action) {
  try {
    action();
  } catch (const TraceError& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected a TraceError";
  return "";
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void writeFile(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

void createTraceAtVersion(const std::string& path, int version) {
  SqliteDb db(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  SqliteTransaction transaction(db);
  for (int applied = 0; applied < version; ++applied)
    db.exec(schemaMigrations()[applied]);
  db.exec(("PRAGMA user_version = " + std::to_string(version)).c_str());
  // Only version-1 columns: every later version must keep them.
  db.exec(R"sql(
    INSERT INTO runs (id, started_at, pid, host, command, torch_version, loupe_version, options)
    VALUES (1, '2023-01-01T00:00:00.000Z', 7, 'old-host', 'python old.py', '2.1.0', '0.0.1', '{}');
    INSERT INTO compiles (id, run_id, compile_key, frame_name, frame_file, frame_line, graph_kind,
                          input_signature, status, started_at)
    VALUES (1, 1, '0/0', 'forward', 'old.py', 3, 'inference', '[]', 'ok', '2023-01-01T00:00:01.000Z');
  )sql");
  transaction.commit();
}

void execSql(const std::string& path, const char* sql) {
  // A plain connection, without the hardening Loupe's own connections have.
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  if (rc == SQLITE_OK) rc = sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
  std::string message = sqlite3_errmsg(db);
  sqlite3_close(db);
  if (rc != SQLITE_OK) throw std::runtime_error(path + ": " + message);
}

int64_t queryInt(const std::string& path, const char* sql) {
  SqliteDb db(path, SQLITE_OPEN_READONLY);
  SqliteQuery query(db, sql);
  if (!query.next()) throw std::runtime_error(std::string("no row from ") + sql);
  return query.get<int64_t>(0);
}

} // namespace loupe::testing
