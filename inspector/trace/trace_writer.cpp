#include "inspector/trace/trace_writer.h"

#include "inspector/trace/content_hash.h"
#include "inspector/trace/sqlite_db.h"
#include "inspector/trace/trace_json.h"
#include "inspector/trace/trace_schema.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <initializer_list>
#include <thread>
#include <utility>

namespace loupe {
namespace {

// The record's timestamp, or the current UTC time (ISO 8601, milliseconds) when it has none.
std::string timestampOrNow(const std::string& timestamp) {
  if (!timestamp.empty()) return timestamp;
  auto now = std::chrono::system_clock::now();
  std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()) % 1000;
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  size_t length = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &utc);
  std::snprintf(text + length, sizeof text - length, ".%03dZ", static_cast<int>(millis.count()));
  return text;
}

// The columns whose values are a closed set. Readers accept any text, so a new value needs
// no migration, only this list and docs/trace-schema.md.
void requireOneOf(const SqliteDb& db, std::string_view field, std::string_view value,
                  std::initializer_list<std::string_view> allowed) {
  std::string listed;
  for (std::string_view candidate : allowed) {
    if (value == candidate) return;
    listed += (listed.empty() ? "" : ", ") + std::string(candidate);
  }
  throw db.error(std::string(field) + " '" + std::string(value) + "' is not one of: " + listed);
}

// A device as Device::str() writes it: "cpu", "cuda:N" (or "cuda", which traces before
// version 9 used for a CUDA plan).
void requireKernelTarget(const SqliteDb& db, std::string_view target) {
  std::string_view index = target.starts_with("cuda:") ? target.substr(5) : std::string_view();
  bool cudaN = !index.empty() && index.size() < 4 &&
               index.find_first_not_of("0123456789") == std::string_view::npos;
  if (target == "cpu" || target == "cuda" || cudaN) return;
  throw db.error("kernel target '" + std::string(target) + "' is not cpu or cuda:N");
}

void requireKernelCache(const SqliteDb& db, std::string_view cache) {
  requireOneOf(db, "kernel cache", cache, {"hit", "built"});
}

// An update of a kernel recorded earlier: naming one the compile does not have is a bug.
void requireKernelChanged(const SqliteDb& db, int64_t changed, int64_t compile_id,
                          std::string_view kernel_name) {
  if (changed == 0)
    throw db.error("compile " + std::to_string(compile_id) + " has no kernel named '" +
                   std::string(kernel_name) + "'");
}

// JSON text columns must hold JSON, or SQL's json_* functions fail on them later.
void requireJson(const SqliteDb& db, std::string_view field, std::string_view text) {
  if (!nlohmann::json::accept(text)) throw db.error(std::string(field) + " is not valid JSON");
}

// The id of the snapshot with this text, inserting it and its nodes when new. Runs inside
// the pass's transaction.
int64_t storeSnapshot(SqliteDb& db, const SnapshotRecord& snapshot) {
  const std::string hash = contentHash(snapshot.lir);
  // A stored text with the same hash but different content is a collision: this text then
  // goes under the next free key "<hash>-1", "<hash>-2", ...
  for (int attempt = 0;; ++attempt) {
    std::string key = attempt == 0 ? hash : hash + "-" + std::to_string(attempt);
    SqliteQuery stored(db, "SELECT id, lir FROM snapshots WHERE hash = ?1", key);
    if (stored.next()) {
      if (stored.get<std::string>(1) == snapshot.lir) return stored.get<int64_t>(0);
      continue;
    }
    int64_t snapshot_id =
        db.insert("INSERT INTO snapshots (hash, lir, node_count) VALUES (?1, ?2, ?3)", key,
                  snapshot.lir, snapshot.nodes.size());
    for (size_t ordinal = 0; ordinal < snapshot.nodes.size(); ++ordinal) {
      const NodeRecord& node = snapshot.nodes[ordinal];
      std::optional<std::string> shape;
      if (node.shape) shape = shapeToJson(*node.shape);
      db.run(R"sql(
        INSERT INTO snapshot_nodes (snapshot_id, ordinal, name, op, result_types, dtype, shape,
                                    file, line, module_path, fused_group, kernel)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12))sql",
             snapshot_id, ordinal, node.name, node.op, node.result_types, node.dtype, shape,
             node.file, node.line, node.module_path, node.fused_group, node.kernel);
    }
    return snapshot_id;
  }
}

// Puts the file in WAL mode (a no-op when it is). The switch needs the file to itself, and
// when two writers open a new file at once sqlite refuses one of them at once rather than
// let it wait (waiting could deadlock), so that one tries again until the other is done.
// A file system without WAL support leaves the file in its rollback mode, which still works.
void switchToWal(SqliteDb& db) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int rc;
  while (((rc = db.tryExec("PRAGMA journal_mode = WAL")) & 0xff) == SQLITE_BUSY &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (rc != SQLITE_OK) db.fail(rc, "PRAGMA journal_mode = WAL");
}

} // namespace

TraceWriter::TraceWriter(std::string path)
    : db_(std::make_unique<SqliteDb>(std::move(path), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)) {
  // Refuse foreign and newer files before anything is written to them.
  checkTraceSchema(*db_);
  // WAL lets a viewer read a live trace and several processes append to it. In WAL mode
  // synchronous=NORMAL loses no committed transaction when a process dies, only on power
  // loss, and spares an fsync per pass.
  switchToWal(*db_);
  db_->exec("PRAGMA synchronous = NORMAL");
  migrateToLatest(*db_);
  // Only after migrating: migrations may rebuild tables, which foreign keys would block.
  db_->exec("PRAGMA foreign_keys = ON");
}

TraceWriter::~TraceWriter() {
  if (!mutex_) return; // moved from
  // The last writer to close turns the trace back into one self-contained file: readers of
  // a WAL file must create -wal and -shm files beside it, which litters the directory and
  // fails where it is read-only. Leaving WAL needs the file to itself, so while any other
  // process has it open this does nothing and the next writer to close tries again.
  std::lock_guard lock(*mutex_);
  if (db_) db_->tryExec("PRAGMA journal_mode = DELETE");
}

TraceWriter::TraceWriter(TraceWriter&&) noexcept = default;

const std::string& TraceWriter::path() const {
  return db_->path();
}

int64_t TraceWriter::beginRun(const RunInfo& run) {
  std::lock_guard lock(*mutex_);
  requireJson(*db_, "run options", run.options_json);
  return db_->insert(R"sql(
    INSERT INTO runs (started_at, pid, host, command, torch_version, loupe_version, options,
                      rank, world_size, process_group_backend)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10))sql",
                     timestampOrNow(run.started_at), run.pid, run.host, run.command,
                     run.torch_version, run.loupe_version, run.options_json, run.rank,
                     run.world_size, run.process_group_backend);
}

int64_t TraceWriter::beginCompile(int64_t run_id, const CompileInfo& compile) {
  std::lock_guard lock(*mutex_);
  requireOneOf(*db_, "graph kind", compile.graph_kind,
               {"forward", "backward", "inference", "graph"});
  requireJson(*db_, "compile input signature", compile.input_signature_json);
  return db_->insert(R"sql(
    INSERT INTO compiles (run_id, compile_key, frame_name, frame_file, frame_line, graph_kind,
                          input_signature, status, started_at)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'running', ?8))sql",
                     run_id, compile.compile_key, compile.frame_name, compile.frame_file,
                     compile.frame_line, compile.graph_kind, compile.input_signature_json,
                     timestampOrNow(compile.started_at));
}

void TraceWriter::finishCompile(int64_t compile_id, const CompileOutcome& outcome) {
  std::lock_guard lock(*mutex_);
  requireOneOf(*db_, "compile status", outcome.status, {"ok", "error", "eager_fallback"});
  int64_t changed = db_->run(R"sql(
    UPDATE compiles SET status = ?2, error_message = ?3, error_pass = ?4, wall_ms = ?5
    WHERE id = ?1)sql",
                             compile_id, outcome.status, outcome.error_message, outcome.error_pass,
                             outcome.wall_ms);
  if (changed == 0) throw db_->error("no compile with id " + std::to_string(compile_id));
  checkpoint();
}

int64_t TraceWriter::recordPass(int64_t compile_id, const PassRecord& pass) {
  std::lock_guard lock(*mutex_);
  const PassInfo& info = pass.info;
  requireOneOf(*db_, "pass status", info.status, {"ok", "failed"});
  SqliteTransaction transaction(*db_);
  std::optional<int64_t> snapshot_id;
  if (pass.snapshot) snapshot_id = storeSnapshot(*db_, *pass.snapshot);
  int64_t pass_id = db_->insert(R"sql(
    INSERT INTO passes (compile_id, ordinal, name, wall_ms, changed, plan_changed, nodes_before,
                        nodes_after, decisions, snapshot_id, status, error_message)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12))sql",
                                compile_id, info.ordinal, info.name, info.wall_ms, info.changed,
                                info.plan_changed, info.nodes_before, info.nodes_after,
                                info.decisions, snapshot_id, info.status, info.error_message);
  if (pass_commit_hook_) pass_commit_hook_();
  transaction.commit();
  return pass_id;
}

int64_t TraceWriter::recordDecision(int64_t pass_id, const DecisionRecord& decision) {
  std::lock_guard lock(*mutex_);
  std::optional<int64_t> compile_id;
  {
    SqliteQuery pass(*db_, "SELECT compile_id FROM passes WHERE id = ?1", pass_id);
    if (pass.next()) compile_id = pass.get<int64_t>(0);
  }
  if (!compile_id) throw db_->error("no pass with id " + std::to_string(pass_id));
  return db_->insert(R"sql(
    INSERT INTO decisions (compile_id, pass_id, ordinal, kind, description, nodes, applied,
                           rule_file, rule_line)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9))sql",
                     *compile_id, pass_id, decision.ordinal, decision.kind, decision.description,
                     toJsonText(decision.nodes), decision.applied, decision.rule_file,
                     decision.rule_line);
}

void TraceWriter::recordKernel(int64_t compile_id, const KernelRecord& kernel) {
  std::lock_guard lock(*mutex_);
  requireOneOf(*db_, "kernel kind", kernel.kind, {"generated", "library", "fallback", "view"});
  requireKernelTarget(*db_, kernel.target);
  if (kernel.cache) requireKernelCache(*db_, *kernel.cache);
  db_->run(R"sql(
    INSERT INTO kernels (compile_id, name, kind, target, op_summary, reason, alternatives,
                         fused_nodes, source, max_error, cache, build_ms)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12))sql",
           compile_id, kernel.name, kernel.kind, kernel.target, kernel.op_summary, kernel.reason,
           toJsonText(kernel.alternatives), toJsonText(kernel.fused_nodes), kernel.source,
           kernel.max_error, kernel.cache, kernel.build_ms);
}

void TraceWriter::recordKernelMaxError(int64_t compile_id, std::string_view kernel_name,
                                       double max_error) {
  std::lock_guard lock(*mutex_);
  int64_t changed =
      db_->run("UPDATE kernels SET max_error = ?3 WHERE compile_id = ?1 AND name = ?2", compile_id,
               kernel_name, max_error);
  requireKernelChanged(*db_, changed, compile_id, kernel_name);
}

void TraceWriter::recordKernelBuild(int64_t compile_id, std::string_view kernel_name,
                                    bool from_cache, double build_ms, std::string_view resources) {
  std::optional<std::string_view> reported;
  if (!resources.empty()) reported = resources;
  int64_t changed = db_->run("UPDATE kernels SET cache = ?3, build_ms = ?4, resources = ?5 WHERE "
                             "compile_id = ?1 AND name = ?2",
                             compile_id, kernel_name,
                             std::string_view(from_cache ? "hit" : "built"), build_ms, reported);
  requireKernelChanged(*db_, changed, compile_id, kernel_name);
}

void TraceWriter::recordBuffers(int64_t compile_id, const std::vector<BufferRecord>& buffers) {
  std::lock_guard lock(*mutex_);
  SqliteTransaction transaction(*db_);
  for (const BufferRecord& buffer : buffers) {
    db_->run(R"sql(
      INSERT INTO buffers (compile_id, name, size_bytes, offset, first_use, last_use,
                           is_graph_input, is_graph_output, size_expr)
      VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9))sql",
             compile_id, buffer.name, buffer.size_bytes, buffer.offset, buffer.first_use,
             buffer.last_use, buffer.is_graph_input, buffer.is_graph_output, buffer.size_expr);
  }
  transaction.commit();
}

void TraceWriter::recordMemoryPlan(int64_t compile_id, const MemoryPlanRecord& plan) {
  std::lock_guard lock(*mutex_);
  db_->run(R"sql(
    INSERT OR REPLACE INTO memory_plans (compile_id, arena_bytes, peak_bytes, measured_peak_bytes,
                                         arena_expr, peak_expr, output_bytes, output_expr)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8))sql",
           compile_id, plan.arena_bytes, plan.peak_bytes, plan.measured_peak_bytes, plan.arena_expr,
           plan.peak_expr, plan.output_bytes, plan.output_expr);
}

void TraceWriter::recordMemoryLayout(int64_t compile_id, const MemoryLayoutRecord& layout) {
  std::lock_guard lock(*mutex_);
  db_->run(R"sql(
    INSERT INTO memory_layouts (compile_id, bindings, arena_bytes, output_bytes, peak_bytes,
                                measured_peak_bytes, offsets, sizes)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
    ON CONFLICT (compile_id, bindings) DO UPDATE SET
      arena_bytes = excluded.arena_bytes, output_bytes = excluded.output_bytes,
      peak_bytes = excluded.peak_bytes, measured_peak_bytes = excluded.measured_peak_bytes,
      offsets = excluded.offsets, sizes = excluded.sizes)sql",
           compile_id, namedIntegersToJson(layout.bindings), layout.arena_bytes,
           layout.output_bytes, layout.peak_bytes, layout.measured_peak_bytes,
           namedIntegersToJson(layout.offsets), namedIntegersToJson(layout.sizes));
}

void TraceWriter::recordRunError(int64_t compile_id, const RunErrorRecord& error) {
  std::lock_guard lock(*mutex_);
  db_->run(R"sql(
    INSERT INTO run_errors (compile_id, node, message, created_at) VALUES (?1, ?2, ?3, ?4))sql",
           compile_id, error.node, error.message, timestampOrNow(error.created_at));
  checkpoint();
}

void TraceWriter::recordKernelStats(int64_t compile_id,
                                    const std::vector<KernelStatsRecord>& kernels) {
  std::lock_guard lock(*mutex_);
  {
    SqliteTransaction transaction(*db_);
    for (const KernelStatsRecord& k : kernels)
      db_->run(R"sql(
        INSERT OR REPLACE INTO kernel_stats (compile_id, kernel, implementation, calls, total_ms,
                                             scratch_bytes, launch, profile_ms, profile_runs,
                                             bytes, flops, peak_fraction, bound)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13))sql",
               compile_id, k.kernel, k.implementation, k.calls, k.total_ms, k.scratch_bytes,
               k.launch, k.profile_ms, k.profile_runs, k.bytes, k.flops, k.peak_fraction, k.bound);
    transaction.commit();
  }
  checkpoint();
}

void TraceWriter::checkpoint() {
  std::lock_guard lock(*mutex_);
  // Busy (a reader holds an old snapshot, another process writes): what could be copied was;
  // the next checkpoint, or the last writer's close, does the rest.
  db_->tryExec("PRAGMA wal_checkpoint(TRUNCATE)");
}

int64_t TraceWriter::recordBisection(int64_t compile_id, const BisectionRecord& bisection) {
  std::lock_guard lock(*mutex_);
  requireOneOf(*db_, "bisection status", bisection.status,
               {"no_divergence", "culprit_decision", "culprit_pass"});
  for (const BisectionStepRecord& step : bisection.steps)
    requireOneOf(*db_, "bisection step phase", step.phase, {"full", "pass", "decision"});
  SqliteTransaction transaction(*db_);
  int64_t bisection_id = db_->insert(
      R"sql(
    INSERT INTO bisections (compile_id, status, rtol, atol, injected_fault, first_bad_pass,
                            total_decisions, decision_ordinal, decision_pass, decision_kind,
                            decision_description, decision_nodes, culprit_nodes, created_at)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14))sql",
      compile_id, bisection.status, bisection.rtol, bisection.atol, bisection.injected_fault,
      bisection.first_bad_pass, bisection.total_decisions, bisection.decision_ordinal,
      bisection.decision_pass, bisection.decision_kind, bisection.decision_description,
      toJsonText(bisection.decision_nodes), toJsonText(bisection.culprit_nodes),
      timestampOrNow(bisection.created_at));
  for (size_t ordinal = 0; ordinal < bisection.steps.size(); ++ordinal) {
    const BisectionStepRecord& step = bisection.steps[ordinal];
    db_->run(R"sql(
      INSERT INTO bisection_steps (bisection_id, ordinal, phase, stop_after, decision_limit,
                                   diverged, max_abs_error, max_rel_error, error_message)
      VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9))sql",
             bisection_id, ordinal, step.phase, step.stop_after, step.decision_limit, step.diverged,
             step.max_abs_error, step.max_rel_error, step.error_message);
  }
  transaction.commit();
  return bisection_id;
}

int64_t TraceWriter::recordReduction(int64_t compile_id, const ReductionRecord& reduction) {
  std::lock_guard lock(*mutex_);
  return db_->insert(R"sql(
    INSERT INTO reductions (compile_id, started_at, original_nodes, reduced_nodes, trials, wall_ms,
                            budget_exhausted, reduced_lir, command)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9))sql",
                     compile_id, timestampOrNow(reduction.started_at), reduction.original_nodes,
                     reduction.reduced_nodes, reduction.trials, reduction.wall_ms,
                     reduction.budget_exhausted, reduction.reduced_lir, reduction.command);
}

void TraceWriter::recordGraphBreak(int64_t run_id, const GraphBreakRecord& graph_break) {
  std::lock_guard lock(*mutex_);
  db_->run(R"sql(
    INSERT INTO graph_breaks (run_id, compile_id, frame_name, reason, user_stack, created_at)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6))sql",
           run_id, graph_break.compile_id, graph_break.frame_name, graph_break.reason,
           toJsonText(graph_break.user_stack), timestampOrNow(graph_break.created_at));
}

int64_t TraceWriter::markGuardFailed(int64_t compile_id, std::string_view kind,
                                     std::string_view expr) {
  std::lock_guard lock(*mutex_);
  return db_->run("UPDATE guards SET failed = 1 WHERE compile_id = ?1 AND kind = ?2 AND expr = ?3",
                  compile_id, std::string(kind), std::string(expr));
}

void TraceWriter::recordGuard(int64_t compile_id, const GuardRecord& guard) {
  std::lock_guard lock(*mutex_);
  db_->run(R"sql(
    INSERT INTO guards (compile_id, kind, expr, user_stack, failed) VALUES (?1, ?2, ?3, ?4, ?5))sql",
           compile_id, guard.kind, guard.expr, toJsonText(guard.user_stack), guard.failed);
}

void TraceWriter::recordGuards(int64_t compile_id, const std::vector<GuardRecord>& guards) {
  std::lock_guard lock(*mutex_);
  SqliteTransaction transaction(*db_);
  for (const GuardRecord& guard : guards)
    recordGuard(compile_id, guard);
  transaction.commit();
}

void TraceWriter::recordRecompile(int64_t compile_id, const RecompileRecord& recompile) {
  std::lock_guard lock(*mutex_);
  db_->run(R"sql(
    INSERT INTO recompiles (compile_id, previous_compile_key, reason, failed_guard)
    VALUES (?1, ?2, ?3, ?4))sql",
           compile_id, recompile.previous_compile_key, recompile.reason, recompile.failed_guard);
}

void TraceWriter::recordTracedLines(int64_t compile_id, const std::vector<TracedLine>& lines) {
  std::lock_guard lock(*mutex_);
  SqliteTransaction transaction(*db_);
  db_->run("DELETE FROM traced_lines WHERE compile_id = ?1", compile_id);
  int64_t ordinal = 0;
  for (const TracedLine& line : lines)
    db_->run(R"sql(
      INSERT INTO traced_lines (compile_id, ordinal, file, line, function, depth)
      VALUES (?1, ?2, ?3, ?4, ?5, ?6))sql",
             compile_id, ordinal++, line.file, line.line, line.function, line.depth);
  transaction.commit();
}

void TraceWriter::recordWarning(int64_t run_id, const WarningRecord& warning) {
  std::lock_guard lock(*mutex_);
  db_->run(R"sql(
    INSERT INTO warnings (run_id, compile_id, message, created_at)
    VALUES (?1, ?2, ?3, ?4))sql",
           run_id, warning.compile_id, warning.message, timestampOrNow(warning.created_at));
}

void TraceWriter::recordCudaGraphStats(int64_t compile_id, const CudaGraphStatsRecord& stats) {
  std::lock_guard lock(*mutex_);
  db_->run(R"sql(
    INSERT OR REPLACE INTO cuda_graph_stats (compile_id, chosen_by, captures, replays,
                                             uncaptured_calls, failure, updated_at)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7))sql",
           compile_id, stats.chosen_by, stats.captures, stats.replays, stats.uncaptured_calls,
           stats.failure, timestampOrNow(stats.updated_at));
}

void TraceWriter::setPassCommitHookForTesting(std::function<void()> hook) {
  pass_commit_hook_ = std::move(hook);
}

} // namespace loupe
