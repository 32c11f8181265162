#include "inspector/trace/trace_schema.h"

#include "inspector/trace/sqlite_db.h"

#include <array>
#include <string>

namespace loupe {
namespace {

// Version 1: the core tables.
constexpr const char* kVersion1 = R"sql(
CREATE TABLE meta (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
INSERT INTO meta (key, value) VALUES ('format', 'loupe-trace');

CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  started_at TEXT NOT NULL,
  pid INTEGER NOT NULL,
  host TEXT NOT NULL,
  command TEXT NOT NULL,
  torch_version TEXT NOT NULL,
  loupe_version TEXT NOT NULL,
  options TEXT NOT NULL
);

CREATE TABLE compiles (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs (id),
  compile_key TEXT NOT NULL,
  frame_name TEXT NOT NULL,
  frame_file TEXT NOT NULL,
  frame_line INTEGER NOT NULL,
  graph_kind TEXT NOT NULL,
  input_signature TEXT NOT NULL,
  status TEXT NOT NULL,
  error_message TEXT,
  error_pass TEXT,
  started_at TEXT NOT NULL,
  wall_ms REAL
);
CREATE INDEX compiles_by_run ON compiles (run_id);

CREATE TABLE snapshots (
  id INTEGER PRIMARY KEY,
  hash TEXT NOT NULL UNIQUE,
  lir TEXT NOT NULL,
  node_count INTEGER NOT NULL
);

CREATE TABLE snapshot_nodes (
  snapshot_id INTEGER NOT NULL REFERENCES snapshots (id),
  ordinal INTEGER NOT NULL,
  name TEXT NOT NULL,
  op TEXT NOT NULL,
  result_types TEXT NOT NULL,
  dtype TEXT,
  shape TEXT,
  file TEXT,
  line INTEGER,
  module_path TEXT,
  fused_group TEXT,
  kernel TEXT,
  PRIMARY KEY (snapshot_id, ordinal)
) WITHOUT ROWID;

CREATE TABLE passes (
  id INTEGER PRIMARY KEY,
  compile_id INTEGER NOT NULL REFERENCES compiles (id),
  ordinal INTEGER NOT NULL,
  name TEXT NOT NULL,
  wall_ms REAL NOT NULL,
  changed INTEGER NOT NULL,
  nodes_before INTEGER NOT NULL,
  nodes_after INTEGER NOT NULL,
  decisions INTEGER NOT NULL,
  snapshot_id INTEGER REFERENCES snapshots (id),
  status TEXT NOT NULL,
  error_message TEXT,
  UNIQUE (compile_id, ordinal)
);

CREATE TABLE kernels (
  id INTEGER PRIMARY KEY,
  compile_id INTEGER NOT NULL REFERENCES compiles (id),
  name TEXT NOT NULL,
  kind TEXT NOT NULL,
  target TEXT NOT NULL,
  op_summary TEXT NOT NULL,
  reason TEXT NOT NULL,
  alternatives TEXT NOT NULL,
  fused_nodes TEXT NOT NULL,
  source TEXT NOT NULL,
  UNIQUE (compile_id, name)
);

CREATE TABLE buffers (
  id INTEGER PRIMARY KEY,
  compile_id INTEGER NOT NULL REFERENCES compiles (id),
  name TEXT NOT NULL,
  size_bytes INTEGER NOT NULL,
  offset INTEGER,
  first_use INTEGER NOT NULL,
  last_use INTEGER NOT NULL,
  is_graph_input INTEGER NOT NULL,
  is_graph_output INTEGER NOT NULL,
  UNIQUE (compile_id, name)
);

CREATE TABLE memory_plans (
  compile_id INTEGER PRIMARY KEY REFERENCES compiles (id),
  arena_bytes INTEGER NOT NULL,
  peak_bytes INTEGER NOT NULL,
  measured_peak_bytes INTEGER
);

CREATE TABLE graph_breaks (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs (id),
  compile_id INTEGER REFERENCES compiles (id),
  frame_name TEXT NOT NULL,
  reason TEXT NOT NULL,
  user_stack TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX graph_breaks_by_run ON graph_breaks (run_id);

CREATE TABLE guards (
  id INTEGER PRIMARY KEY,
  compile_id INTEGER NOT NULL REFERENCES compiles (id),
  kind TEXT NOT NULL,
  expr TEXT NOT NULL,
  user_stack TEXT NOT NULL,
  failed INTEGER NOT NULL
);
CREATE INDEX guards_by_compile ON guards (compile_id);

CREATE TABLE recompiles (
  id INTEGER PRIMARY KEY,
  compile_id INTEGER NOT NULL REFERENCES compiles (id),
  previous_compile_key TEXT NOT NULL,
  reason TEXT NOT NULL,
  failed_guard TEXT
);
CREATE INDEX recompiles_by_compile ON recompiles (compile_id);

CREATE TABLE runtime_stats (
  compile_id INTEGER PRIMARY KEY REFERENCES compiles (id),
  calls INTEGER NOT NULL,
  total_ms REAL NOT NULL
);

CREATE TABLE warnings (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs (id),
  compile_id INTEGER REFERENCES compiles (id),
  message TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX warnings_by_run ON warnings (run_id);
)sql";

// Version 2: check mode's per-kernel error and the decision log for bisection.
constexpr const char* kVersion2 = R"sql(
ALTER TABLE kernels ADD COLUMN max_error REAL;

CREATE TABLE decisions (
  id INTEGER PRIMARY KEY,
  compile_id INTEGER NOT NULL REFERENCES compiles (id),
  pass_id INTEGER NOT NULL REFERENCES passes (id),
  ordinal INTEGER NOT NULL,
  kind TEXT NOT NULL,
  description TEXT NOT NULL,
  nodes TEXT NOT NULL,
  applied INTEGER NOT NULL,
  UNIQUE (compile_id, ordinal)
);
CREATE INDEX decisions_by_pass ON decisions (pass_id);
)sql";

// Version 3: symbolic memory plans. With dynamic shapes a buffer's size and the peak are
// expressions over the graph's symbols (2048*s0); the byte columns then hold -1.
constexpr const char* kVersion3 = R"sql(
ALTER TABLE buffers ADD COLUMN size_expr TEXT;
ALTER TABLE memory_plans ADD COLUMN arena_expr TEXT;
ALTER TABLE memory_plans ADD COLUMN peak_expr TEXT;
)sql";

// Version 4: bisections (`loupe bisect`, the backend's bisect mode) and their steps.
constexpr const char* kVersion4 = R"sql(
CREATE TABLE bisections (
  id INTEGER PRIMARY KEY,
  compile_id INTEGER NOT NULL REFERENCES compiles (id),
  status TEXT NOT NULL,
  rtol REAL NOT NULL,
  atol REAL NOT NULL,
  injected_fault INTEGER,
  first_bad_pass TEXT,
  total_decisions INTEGER NOT NULL,
  decision_ordinal INTEGER,
  decision_pass TEXT,
  decision_kind TEXT,
  decision_description TEXT,
  decision_nodes TEXT NOT NULL,
  culprit_nodes TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX bisections_by_compile ON bisections (compile_id);

CREATE TABLE bisection_steps (
  bisection_id INTEGER NOT NULL REFERENCES bisections (id),
  ordinal INTEGER NOT NULL,
  phase TEXT NOT NULL,
  stop_after TEXT,
  decision_limit INTEGER,
  diverged INTEGER NOT NULL,
  max_abs_error REAL NOT NULL,
  max_rel_error REAL NOT NULL,
  error_message TEXT,
  PRIMARY KEY (bisection_id, ordinal)
) WITHOUT ROWID;
)sql";

// Version 5: the viewer's layout cache. A derived table: deleting its rows loses nothing but
// the time to lay the graphs out again.
constexpr const char* kVersion5 = R"sql(
CREATE TABLE layout_cache (
  snapshot_hash TEXT NOT NULL,
  layout_key TEXT NOT NULL,
  layout BLOB NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY (snapshot_hash, layout_key)
) WITHOUT ROWID;
)sql";

// Version 6: what the pass manager tells of each pass: a plan change (kernel choices, memory
// plan) beside `changed` (the graph), and the source location of the rule behind each decision.
constexpr const char* kVersion6 = R"sql(
ALTER TABLE passes ADD COLUMN plan_changed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE decisions ADD COLUMN rule_file TEXT;
ALTER TABLE decisions ADD COLUMN rule_line INTEGER;
)sql";

// Version 7: where each generated kernel came from: the kernel cache ('hit') or the host
// compiler ('built'), and how long its library took.
constexpr const char* kVersion7 = R"sql(
ALTER TABLE kernels ADD COLUMN cache TEXT;
ALTER TABLE kernels ADD COLUMN build_ms REAL;
)sql";

// Version 8: what ran. Per-kernel run-time stats replace the per-compile totals (which only
// `loupe run` wrote; they are dropped); each binding of its symbols a compile ran at gets its
// concrete memory layout and measured peak; memory plans state the bytes handed to the caller
// (graph outputs left the arena: a plan's peak is now arena + outputs); a compiled graph whose
// run failed records the error (the graph then runs eagerly).
constexpr const char* kVersion8 = R"sql(
DROP TABLE runtime_stats;

CREATE TABLE kernel_stats (
  compile_id INTEGER NOT NULL REFERENCES compiles (id),
  kernel TEXT NOT NULL,
  implementation TEXT NOT NULL,
  calls INTEGER NOT NULL,
  total_ms REAL NOT NULL,
  scratch_bytes INTEGER NOT NULL,
  PRIMARY KEY (compile_id, kernel)
) WITHOUT ROWID;

CREATE TABLE memory_layouts (
  id INTEGER PRIMARY KEY,
  compile_id INTEGER NOT NULL REFERENCES compiles (id),
  bindings TEXT NOT NULL,
  arena_bytes INTEGER NOT NULL,
  output_bytes INTEGER NOT NULL,
  peak_bytes INTEGER NOT NULL,
  measured_peak_bytes INTEGER,
  offsets TEXT NOT NULL,
  sizes TEXT NOT NULL,
  UNIQUE (compile_id, bindings)
);

ALTER TABLE memory_plans ADD COLUMN output_bytes INTEGER;
ALTER TABLE memory_plans ADD COLUMN output_expr TEXT;

CREATE TABLE run_errors (
  id INTEGER PRIMARY KEY,
  compile_id INTEGER NOT NULL REFERENCES compiles (id),
  node TEXT,
  message TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX run_errors_by_compile ON run_errors (compile_id);
)sql";

// Version 9: what the device compiler reported for each generated kernel (CUDA: the target
// architecture, and per entry its registers, shared memory, stack and spills).
constexpr const char* kVersion9 = R"sql(
ALTER TABLE kernels ADD COLUMN resources TEXT;
)sql";

// Version 10: how a kernel's last timed call launched on its device (CUDA: the entry chosen for
// those tensors, why, the grid and block).
constexpr const char* kVersion10 = R"sql(
ALTER TABLE kernel_stats ADD COLUMN launch TEXT;
)sql";

// Version 11: reductions (`loupe reduce`): a diverging compile shrunk to a smaller graph that
// still diverges, with the command that reproduces it.
constexpr const char* kVersion11 = R"sql(
CREATE TABLE reductions (
  id INTEGER PRIMARY KEY,
  compile_id INTEGER NOT NULL REFERENCES compiles (id),
  started_at TEXT NOT NULL,
  original_nodes INTEGER NOT NULL,
  reduced_nodes INTEGER NOT NULL,
  trials INTEGER NOT NULL,
  wall_ms REAL NOT NULL,
  budget_exhausted INTEGER NOT NULL,
  reduced_lir TEXT NOT NULL,
  command TEXT NOT NULL
);
CREATE INDEX reductions_by_compile ON reductions (compile_id);
)sql";

// Version 12: a run's place in a torch.distributed job (rank, world size, the process group's
// backend), so the traces of one job's ranks can be compared (`loupe diff --ranks`).
constexpr const char* kVersion12 = R"sql(
ALTER TABLE runs ADD COLUMN rank INTEGER;
ALTER TABLE runs ADD COLUMN world_size INTEGER;
ALTER TABLE runs ADD COLUMN process_group_backend TEXT;
)sql";

// Version 13: the lines Dynamo traced for each compile, in order, so the differ can name the
// condition at which two compiles of one frame took different branches.
constexpr const char* kVersion13 = R"sql(
CREATE TABLE traced_lines (
  compile_id INTEGER NOT NULL REFERENCES compiles (id),
  ordinal INTEGER NOT NULL,
  file TEXT NOT NULL,
  line INTEGER NOT NULL,
  function TEXT NOT NULL,
  depth INTEGER NOT NULL,
  PRIMARY KEY (compile_id, ordinal)
) WITHOUT ROWID;
)sql";

// Version 14: profiling (docs/profile.md) in the per-kernel table: the median profiled time of a
// call and how many calls were profiled, the bytes and FLOPs the IR says a call moves and
// performs, and the share of the device's peak it reached with which peak bound it. Null where
// the kernel was not profiled (and, for the share and bound, where the peak is unknown).
constexpr const char* kVersion14 = R"sql(
ALTER TABLE kernel_stats ADD COLUMN profile_ms REAL;
ALTER TABLE kernel_stats ADD COLUMN profile_runs INTEGER;
ALTER TABLE kernel_stats ADD COLUMN bytes INTEGER;
ALTER TABLE kernel_stats ADD COLUMN flops REAL;
ALTER TABLE kernel_stats ADD COLUMN peak_fraction REAL;
ALTER TABLE kernel_stats ADD COLUMN bound TEXT;
)sql";

// Version 15: how a compiled GPU graph replayed as a CUDA graph (docs/cuda.md): its captures,
// replays and the calls that ran launched one by one, and why capturing stopped if it did. A
// replay runs no per-kernel accounting, so kernel_stats alone under-counts such a graph's calls.
constexpr const char* kVersion15 = R"sql(
CREATE TABLE cuda_graph_stats (
  compile_id INTEGER PRIMARY KEY REFERENCES compiles (id),
  chosen_by TEXT NOT NULL,
  captures INTEGER NOT NULL,
  replays INTEGER NOT NULL,
  uncaptured_calls INTEGER NOT NULL,
  failure TEXT,
  updated_at TEXT NOT NULL
);
)sql";

constexpr std::array kMigrations = {kVersion1,  kVersion2,  kVersion3,  kVersion4,  kVersion5,
                                    kVersion6,  kVersion7,  kVersion8,  kVersion9,  kVersion10,
                                    kVersion11, kVersion12, kVersion13, kVersion14, kVersion15};

} // namespace

std::span<const char* const> schemaMigrations() {
  return kMigrations;
}

int latestSchemaVersion() {
  return static_cast<int>(kMigrations.size());
}

int checkTraceSchema(SqliteDb& db) {
  SqliteQuery objects(db, "SELECT count(*) FROM sqlite_master");
  objects.next();
  if (objects.get<int64_t>(0) == 0) return 0;

  SqliteQuery meta_table(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'");
  bool is_trace = meta_table.next();
  if (is_trace) {
    SqliteQuery format(db, "SELECT value FROM meta WHERE key = 'format'");
    is_trace = format.next() && format.get<std::string>(0) == "loupe-trace";
  }
  if (!is_trace)
    throw db.error("not a Loupe trace (it has no meta table with format 'loupe-trace')");

  SqliteQuery user_version(db, "PRAGMA user_version");
  user_version.next();
  int version = user_version.get<int>(0);
  if (version > latestSchemaVersion()) {
    throw db.error("schema version " + std::to_string(version) +
                   " is newer than this Loupe understands (" +
                   std::to_string(latestSchemaVersion()) + "); upgrade Loupe");
  }
  if (version < 1)
    throw db.error("damaged Loupe trace (schema version " + std::to_string(version) + ")");
  return version;
}

void migrateToLatest(SqliteDb& db) {
  if (checkTraceSchema(db) == latestSchemaVersion()) return;
  SqliteTransaction transaction(db);
  // Another process may have migrated the file between the check and taking the lock.
  for (int version = checkTraceSchema(db); version < latestSchemaVersion(); ++version) {
    db.exec(kMigrations[static_cast<size_t>(version)]);
    db.exec(("PRAGMA user_version = " + std::to_string(version + 1)).c_str());
  }
  transaction.commit();
}

} // namespace loupe
