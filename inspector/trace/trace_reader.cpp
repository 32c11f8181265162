#include "inspector/trace/trace_reader.h"

#include "inspector/trace/sqlite_db.h"
#include "inspector/trace/trace_json.h"
#include "inspector/trace/trace_schema.h"

#include <algorithm>
#include <filesystem>
#include <utility>

namespace loupe {
namespace {

// Every row of sql (args bound to ?1..?N), each made into a value by read_row.
template <class ReadRow, class... Args>
auto selectAll(SqliteDb& db, std::string_view sql, const ReadRow& read_row, const Args&... args) {
  std::vector<decltype(read_row(std::declval<const SqliteQuery&>()))> rows;
  SqliteQuery query(db, sql, args...);
  while (query.next())
    rows.push_back(read_row(query));
  return rows;
}

// Decodes a JSON column with parse. The file is untrusted, so malformed text is a
// TraceError naming the column rather than a crash or a silent default.
template <class Parse>
auto parseJson(const SqliteDb& db, const SqliteQuery& row, int column, const Parse& parse) {
  try {
    return parse(row.get<std::string>(column));
  } catch (const nlohmann::json::exception& error) {
    throw db.error("malformed JSON in column " + row.columnName(column) + " (" + error.what() +
                   ")");
  }
}

template <class T>
T jsonColumn(const SqliteDb& db, const SqliteQuery& row, int column) {
  return parseJson(db, row, column, [](const std::string& text) { return fromJsonText<T>(text); });
}

// Compiles of one run and/or with one id; all of them when both are absent.
std::vector<CompileRow> selectCompiles(SqliteDb& db, std::optional<int64_t> run_id,
                                       std::optional<int64_t> compile_id) {
  return selectAll(
      db, R"sql(
        SELECT id, run_id, compile_key, frame_name, frame_file, frame_line, graph_kind,
               input_signature, started_at, status, error_message, error_pass, wall_ms
        FROM compiles WHERE (?1 IS NULL OR run_id = ?1) AND (?2 IS NULL OR id = ?2)
        ORDER BY id)sql",
      [](const SqliteQuery& row) {
        return CompileRow{
            .id = row.get<int64_t>(0),
            .run_id = row.get<int64_t>(1),
            .info = {.compile_key = row.get<std::string>(2),
                     .frame_name = row.get<std::string>(3),
                     .frame_file = row.get<std::string>(4),
                     .frame_line = row.get<int>(5),
                     .graph_kind = row.get<std::string>(6),
                     .input_signature_json = row.get<std::string>(7),
                     .started_at = row.get<std::string>(8)},
            .outcome = {.status = row.get<std::string>(9),
                        .error_message = row.get<std::optional<std::string>>(10),
                        .error_pass = row.get<std::optional<std::string>>(11),
                        .wall_ms = row.get<std::optional<double>>(12)},
        };
      },
      run_id, compile_id);
}

} // namespace

TraceReader::TraceReader(std::string path) {
  std::error_code ignored;
  if (!std::filesystem::exists(path, ignored)) throw TraceError(path, "no such file");
  db_ = std::make_unique<SqliteDb>(std::move(path), SQLITE_OPEN_READONLY);
  file_schema_version_ = checkTraceSchema(*db_);
  if (file_schema_version_ == 0) throw db_->error("not a Loupe trace (the database is empty)");
  if (file_schema_version_ < latestSchemaVersion()) {
    db_ = SqliteDb::inMemoryCopyOf(*db_);
    migrateToLatest(*db_);
  }
}

TraceReader::~TraceReader() = default;
TraceReader::TraceReader(TraceReader&&) noexcept = default;
TraceReader& TraceReader::operator=(TraceReader&&) noexcept = default;

const std::string& TraceReader::path() const {
  return db_->path();
}

std::vector<RunRow> TraceReader::runs() const {
  return selectAll(
      *db_, R"sql(
    SELECT id, started_at, pid, host, command, torch_version, loupe_version, options, rank,
           world_size, process_group_backend
    FROM runs ORDER BY id)sql",
      [](const SqliteQuery& row) {
        return RunRow{.id = row.get<int64_t>(0),
                      .info = {.started_at = row.get<std::string>(1),
                               .pid = row.get<int64_t>(2),
                               .host = row.get<std::string>(3),
                               .command = row.get<std::string>(4),
                               .torch_version = row.get<std::string>(5),
                               .loupe_version = row.get<std::string>(6),
                               .options_json = row.get<std::string>(7),
                               .rank = row.get<std::optional<int64_t>>(8),
                               .world_size = row.get<std::optional<int64_t>>(9),
                               .process_group_backend = row.get<std::optional<std::string>>(10)}};
      });
}

std::vector<CompileRow> TraceReader::compiles(std::optional<int64_t> run_id) const {
  return selectCompiles(*db_, run_id, std::nullopt);
}

CompileRow TraceReader::compile(int64_t compile_id) const {
  std::vector<CompileRow> found = selectCompiles(*db_, std::nullopt, compile_id);
  if (found.empty()) throw db_->error("no compile with id " + std::to_string(compile_id));
  return found.front();
}

std::vector<PassRow> TraceReader::passes(int64_t compile_id) const {
  return selectAll(
      *db_, R"sql(
        SELECT id, name, ordinal, wall_ms, changed, plan_changed, nodes_before, nodes_after,
               decisions, status, error_message, snapshot_id
        FROM passes WHERE compile_id = ?1 ORDER BY ordinal)sql",
      [](const SqliteQuery& row) {
        return PassRow{.id = row.get<int64_t>(0),
                       .info = {.name = row.get<std::string>(1),
                                .ordinal = row.get<int>(2),
                                .wall_ms = row.get<double>(3),
                                .changed = row.get<bool>(4),
                                .plan_changed = row.get<bool>(5),
                                .nodes_before = row.get<int64_t>(6),
                                .nodes_after = row.get<int64_t>(7),
                                .decisions = row.get<int>(8),
                                .status = row.get<std::string>(9),
                                .error_message = row.get<std::optional<std::string>>(10)},
                       .snapshot_id = row.get<std::optional<int64_t>>(11)};
      },
      compile_id);
}

SnapshotRecord TraceReader::snapshot(int64_t snapshot_id) const {
  SnapshotRecord snapshot;
  {
    SqliteQuery lir(*db_, "SELECT lir FROM snapshots WHERE id = ?1", snapshot_id);
    if (!lir.next()) throw db_->error("no snapshot with id " + std::to_string(snapshot_id));
    snapshot.lir = lir.get<std::string>(0);
  }
  snapshot.nodes = selectAll(
      *db_, R"sql(
        SELECT name, op, result_types, dtype, shape, file, line, module_path, fused_group, kernel
        FROM snapshot_nodes WHERE snapshot_id = ?1 ORDER BY ordinal)sql",
      [this](const SqliteQuery& row) {
        std::optional<std::vector<std::string>> shape;
        if (row.get<std::optional<std::string>>(4)) shape = parseJson(*db_, row, 4, shapeFromJson);
        return NodeRecord{.name = row.get<std::string>(0),
                          .op = row.get<std::string>(1),
                          .result_types = row.get<std::string>(2),
                          .dtype = row.get<std::optional<std::string>>(3),
                          .shape = std::move(shape),
                          .file = row.get<std::optional<std::string>>(5),
                          .line = row.get<std::optional<int>>(6),
                          .module_path = row.get<std::optional<std::string>>(7),
                          .fused_group = row.get<std::optional<std::string>>(8),
                          .kernel = row.get<std::optional<std::string>>(9)};
      },
      snapshot_id);
  return snapshot;
}

SnapshotRecord TraceReader::snapshotAfterPass(int64_t compile_id,
                                              std::string_view pass_name) const {
  std::vector<PassRow> pipeline = passes(compile_id);
  for (auto pass = pipeline.rbegin(); pass != pipeline.rend(); ++pass) {
    if (pass->info.name != pass_name) continue;
    if (!pass->snapshot_id) {
      throw db_->error("pass '" + pass->info.name + "' (ordinal " +
                       std::to_string(pass->info.ordinal) + ") of compile " +
                       std::to_string(compile_id) + " left no snapshot (status " +
                       pass->info.status + ")");
    }
    return snapshot(*pass->snapshot_id);
  }
  std::vector<std::string> names; // in pipeline order, each once
  for (const PassRow& pass : pipeline) {
    if (std::find(names.begin(), names.end(), pass.info.name) == names.end())
      names.push_back(pass.info.name);
  }
  std::string listed;
  for (const std::string& name : names)
    listed += (listed.empty() ? "" : ", ") + name;
  throw db_->error("compile " + std::to_string(compile_id) + " has no pass named '" +
                   std::string(pass_name) + "'; " +
                   (listed.empty() ? "it has no passes recorded" : "its passes: " + listed));
}

std::vector<DecisionRow> TraceReader::decisions(int64_t compile_id) const {
  return selectAll(
      *db_, R"sql(
        SELECT id, pass_id, ordinal, kind, description, nodes, applied, rule_file, rule_line
        FROM decisions WHERE compile_id = ?1 ORDER BY ordinal)sql",
      [this](const SqliteQuery& row) {
        return DecisionRow{.id = row.get<int64_t>(0),
                           .pass_id = row.get<int64_t>(1),
                           .decision = {.ordinal = row.get<int>(2),
                                        .kind = row.get<std::string>(3),
                                        .description = row.get<std::string>(4),
                                        .nodes = jsonColumn<std::vector<std::string>>(*db_, row, 5),
                                        .applied = row.get<bool>(6),
                                        .rule_file = row.get<std::optional<std::string>>(7),
                                        .rule_line = row.get<std::optional<int>>(8)}};
      },
      compile_id);
}

std::vector<KernelRecord> TraceReader::kernels(int64_t compile_id) const {
  return selectAll(
      *db_, R"sql(
        SELECT name, kind, target, op_summary, reason, alternatives, fused_nodes, source, max_error,
               cache, build_ms, resources
        FROM kernels WHERE compile_id = ?1 ORDER BY id)sql",
      [this](const SqliteQuery& row) {
        return KernelRecord{.name = row.get<std::string>(0),
                            .kind = row.get<std::string>(1),
                            .target = row.get<std::string>(2),
                            .op_summary = row.get<std::string>(3),
                            .reason = row.get<std::string>(4),
                            .alternatives =
                                jsonColumn<std::vector<KernelAlternative>>(*db_, row, 5),
                            .fused_nodes = jsonColumn<std::vector<std::string>>(*db_, row, 6),
                            .source = row.get<std::string>(7),
                            .max_error = row.get<std::optional<double>>(8),
                            .cache = row.get<std::optional<std::string>>(9),
                            .build_ms = row.get<std::optional<double>>(10),
                            .resources = row.get<std::optional<std::string>>(11)};
      },
      compile_id);
}

std::vector<BufferRecord> TraceReader::buffers(int64_t compile_id) const {
  return selectAll(
      *db_, R"sql(
        SELECT name, size_bytes, offset, first_use, last_use, is_graph_input, is_graph_output,
               size_expr
        FROM buffers WHERE compile_id = ?1 ORDER BY id)sql",
      [](const SqliteQuery& row) {
        return BufferRecord{.name = row.get<std::string>(0),
                            .size_bytes = row.get<int64_t>(1),
                            .offset = row.get<std::optional<int64_t>>(2),
                            .first_use = row.get<int64_t>(3),
                            .last_use = row.get<int64_t>(4),
                            .is_graph_input = row.get<bool>(5),
                            .is_graph_output = row.get<bool>(6),
                            .size_expr = row.get<std::optional<std::string>>(7)};
      },
      compile_id);
}

std::optional<MemoryPlanRecord> TraceReader::memoryPlan(int64_t compile_id) const {
  SqliteQuery row(*db_, R"sql(
    SELECT arena_bytes, peak_bytes, measured_peak_bytes, arena_expr, peak_expr, output_bytes,
           output_expr
    FROM memory_plans WHERE compile_id = ?1)sql",
                  compile_id);
  if (!row.next()) return std::nullopt;
  return MemoryPlanRecord{.arena_bytes = row.get<int64_t>(0),
                          .peak_bytes = row.get<int64_t>(1),
                          .measured_peak_bytes = row.get<std::optional<int64_t>>(2),
                          .arena_expr = row.get<std::optional<std::string>>(3),
                          .peak_expr = row.get<std::optional<std::string>>(4),
                          .output_bytes = row.get<std::optional<int64_t>>(5),
                          .output_expr = row.get<std::optional<std::string>>(6)};
}

std::vector<MemoryLayoutRecord> TraceReader::memoryLayouts(int64_t compile_id) const {
  auto named = [this](const SqliteQuery& row, int column) {
    return parseJson(*db_, row, column,
                     [](const std::string& text) { return namedIntegersFromJson(text); });
  };
  return selectAll(
      *db_, R"sql(
        SELECT bindings, arena_bytes, output_bytes, peak_bytes, measured_peak_bytes, offsets, sizes
        FROM memory_layouts WHERE compile_id = ?1 ORDER BY id)sql",
      [&](const SqliteQuery& row) {
        return MemoryLayoutRecord{.bindings = named(row, 0),
                                  .arena_bytes = row.get<int64_t>(1),
                                  .output_bytes = row.get<int64_t>(2),
                                  .peak_bytes = row.get<int64_t>(3),
                                  .measured_peak_bytes = row.get<std::optional<int64_t>>(4),
                                  .offsets = named(row, 5),
                                  .sizes = named(row, 6)};
      },
      compile_id);
}

std::vector<RunErrorRecord> TraceReader::runErrors(int64_t compile_id) const {
  return selectAll(
      *db_, R"sql(
        SELECT node, message, created_at FROM run_errors WHERE compile_id = ?1 ORDER BY id)sql",
      [](const SqliteQuery& row) {
        return RunErrorRecord{.node = row.get<std::optional<std::string>>(0),
                              .message = row.get<std::string>(1),
                              .created_at = row.get<std::string>(2)};
      },
      compile_id);
}

std::vector<KernelStatsRecord> TraceReader::kernelStats(int64_t compile_id) const {
  return selectAll(
      *db_, R"sql(
        SELECT kernel, implementation, calls, total_ms, scratch_bytes, launch, profile_ms,
               profile_runs, bytes, flops, peak_fraction, bound
        FROM kernel_stats WHERE compile_id = ?1 ORDER BY total_ms DESC, kernel)sql",
      [](const SqliteQuery& row) {
        return KernelStatsRecord{.kernel = row.get<std::string>(0),
                                 .implementation = row.get<std::string>(1),
                                 .calls = row.get<int64_t>(2),
                                 .total_ms = row.get<double>(3),
                                 .scratch_bytes = row.get<int64_t>(4),
                                 .launch = row.get<std::optional<std::string>>(5),
                                 .profile_ms = row.get<std::optional<double>>(6),
                                 .profile_runs = row.get<std::optional<int64_t>>(7),
                                 .bytes = row.get<std::optional<int64_t>>(8),
                                 .flops = row.get<std::optional<double>>(9),
                                 .peak_fraction = row.get<std::optional<double>>(10),
                                 .bound = row.get<std::optional<std::string>>(11)};
      },
      compile_id);
}

std::optional<CudaGraphStatsRecord> TraceReader::cudaGraphStats(int64_t compile_id) const {
  std::vector<CudaGraphStatsRecord> rows = selectAll(
      *db_, R"sql(
        SELECT chosen_by, captures, replays, uncaptured_calls, failure, updated_at
        FROM cuda_graph_stats WHERE compile_id = ?1)sql",
      [](const SqliteQuery& row) {
        return CudaGraphStatsRecord{.chosen_by = row.get<std::string>(0),
                                    .captures = row.get<int64_t>(1),
                                    .replays = row.get<int64_t>(2),
                                    .uncaptured_calls = row.get<int64_t>(3),
                                    .failure = row.get<std::optional<std::string>>(4),
                                    .updated_at = row.get<std::string>(5)};
      },
      compile_id);
  if (rows.empty()) return std::nullopt;
  return rows.front();
}

std::vector<GraphBreakRecord> TraceReader::graphBreaks(int64_t run_id) const {
  return selectAll(
      *db_, R"sql(
        SELECT compile_id, frame_name, reason, user_stack, created_at
        FROM graph_breaks WHERE run_id = ?1 ORDER BY id)sql",
      [this](const SqliteQuery& row) {
        return GraphBreakRecord{.compile_id = row.get<std::optional<int64_t>>(0),
                                .frame_name = row.get<std::string>(1),
                                .reason = row.get<std::string>(2),
                                .user_stack = jsonColumn<std::vector<StackFrame>>(*db_, row, 3),
                                .created_at = row.get<std::string>(4)};
      },
      run_id);
}

std::vector<GuardRecord> TraceReader::guards(int64_t compile_id) const {
  return selectAll(
      *db_, "SELECT kind, expr, user_stack, failed FROM guards WHERE compile_id = ?1 ORDER BY id",
      [this](const SqliteQuery& row) {
        return GuardRecord{.kind = row.get<std::string>(0),
                           .expr = row.get<std::string>(1),
                           .user_stack = jsonColumn<std::vector<StackFrame>>(*db_, row, 2),
                           .failed = row.get<bool>(3)};
      },
      compile_id);
}

std::vector<TracedLine> TraceReader::tracedLines(int64_t compile_id) const {
  return selectAll(
      *db_, R"sql(
        SELECT file, line, function, depth
        FROM traced_lines WHERE compile_id = ?1 ORDER BY ordinal)sql",
      [](const SqliteQuery& row) {
        return TracedLine{.file = row.get<std::string>(0),
                          .line = row.get<int>(1),
                          .function = row.get<std::string>(2),
                          .depth = row.get<int>(3)};
      },
      compile_id);
}

std::vector<RecompileRecord> TraceReader::recompiles(int64_t compile_id) const {
  return selectAll(
      *db_, R"sql(
        SELECT previous_compile_key, reason, failed_guard
        FROM recompiles WHERE compile_id = ?1 ORDER BY id)sql",
      [](const SqliteQuery& row) {
        return RecompileRecord{.previous_compile_key = row.get<std::string>(0),
                               .reason = row.get<std::string>(1),
                               .failed_guard = row.get<std::optional<std::string>>(2)};
      },
      compile_id);
}

std::vector<BisectionRow> TraceReader::bisections(std::optional<int64_t> compile_id) const {
  auto rows = selectAll(
      *db_, R"sql(
        SELECT id, compile_id, status, rtol, atol, injected_fault, first_bad_pass,
               total_decisions, decision_ordinal, decision_pass, decision_kind,
               decision_description, decision_nodes, culprit_nodes, created_at
        FROM bisections WHERE ?1 IS NULL OR compile_id = ?1 ORDER BY id)sql",
      [this](const SqliteQuery& row) {
        return BisectionRow{
            .id = row.get<int64_t>(0),
            .compile_id = row.get<int64_t>(1),
            .bisection = {.status = row.get<std::string>(2),
                          .rtol = row.get<double>(3),
                          .atol = row.get<double>(4),
                          .injected_fault = row.get<std::optional<int>>(5),
                          .first_bad_pass = row.get<std::optional<std::string>>(6),
                          .total_decisions = row.get<int>(7),
                          .decision_ordinal = row.get<std::optional<int>>(8),
                          .decision_pass = row.get<std::optional<std::string>>(9),
                          .decision_kind = row.get<std::optional<std::string>>(10),
                          .decision_description = row.get<std::optional<std::string>>(11),
                          .decision_nodes = jsonColumn<std::vector<std::string>>(*db_, row, 12),
                          .culprit_nodes =
                              jsonColumn<std::vector<CulpritNodeRecord>>(*db_, row, 13),
                          .created_at = row.get<std::string>(14)}};
      },
      compile_id);
  for (BisectionRow& row : rows) {
    row.bisection.steps = selectAll(
        *db_, R"sql(
          SELECT phase, stop_after, decision_limit, diverged, max_abs_error, max_rel_error,
                 error_message
          FROM bisection_steps WHERE bisection_id = ?1 ORDER BY ordinal)sql",
        [](const SqliteQuery& step) {
          return BisectionStepRecord{.phase = step.get<std::string>(0),
                                     .stop_after = step.get<std::optional<std::string>>(1),
                                     .decision_limit = step.get<std::optional<int>>(2),
                                     .diverged = step.get<bool>(3),
                                     .max_abs_error = step.get<double>(4),
                                     .max_rel_error = step.get<double>(5),
                                     .error_message = step.get<std::optional<std::string>>(6)};
        },
        row.id);
  }
  return rows;
}

std::vector<ReductionRow> TraceReader::reductions(std::optional<int64_t> compile_id) const {
  return selectAll(
      *db_, R"sql(
        SELECT id, compile_id, started_at, original_nodes, reduced_nodes, trials, wall_ms,
               budget_exhausted, reduced_lir, command
        FROM reductions WHERE ?1 IS NULL OR compile_id = ?1 ORDER BY id)sql",
      [](const SqliteQuery& row) {
        return ReductionRow{.id = row.get<int64_t>(0),
                            .compile_id = row.get<int64_t>(1),
                            .reduction = {.started_at = row.get<std::string>(2),
                                          .original_nodes = row.get<int64_t>(3),
                                          .reduced_nodes = row.get<int64_t>(4),
                                          .trials = row.get<int>(5),
                                          .wall_ms = row.get<double>(6),
                                          .budget_exhausted = row.get<bool>(7),
                                          .reduced_lir = row.get<std::string>(8),
                                          .command = row.get<std::string>(9)}};
      },
      compile_id);
}

std::vector<WarningRecord> TraceReader::warnings(int64_t run_id) const {
  return selectAll(
      *db_, "SELECT compile_id, message, created_at FROM warnings WHERE run_id = ?1 ORDER BY id",
      [](const SqliteQuery& row) {
        return WarningRecord{.compile_id = row.get<std::optional<int64_t>>(0),
                             .message = row.get<std::string>(1),
                             .created_at = row.get<std::string>(2)};
      },
      run_id);
}

TraceReader::Summary TraceReader::summary() const {
  Summary summary;
  const std::pair<const char*, int64_t Summary::*> row_counts[] = {
      {"SELECT count(*) FROM runs", &Summary::runs},
      {"SELECT count(*) FROM compiles", &Summary::compiles},
      {"SELECT count(*) FROM passes", &Summary::passes},
      {"SELECT count(*) FROM snapshots", &Summary::snapshots},
      {"SELECT count(*) FROM snapshot_nodes", &Summary::nodes},
      {"SELECT count(*) FROM decisions", &Summary::decisions},
      {"SELECT count(*) FROM graph_breaks", &Summary::graph_breaks},
      {"SELECT count(*) FROM guards", &Summary::guards},
      {"SELECT count(*) FROM recompiles", &Summary::recompiles},
      {"SELECT count(*) FROM warnings", &Summary::warnings},
  };
  for (auto [sql, count] : row_counts) {
    SqliteQuery query(*db_, sql);
    query.next();
    summary.*count = query.get<int64_t>(0);
  }
  SqliteQuery kernels(*db_, "SELECT kind, count(*) FROM kernels GROUP BY kind");
  while (kernels.next())
    summary.kernels_by_kind[kernels.get<std::string>(0)] = kernels.get<int64_t>(1);
  if (auto fallback = summary.kernels_by_kind.find("fallback");
      fallback != summary.kernels_by_kind.end())
    summary.fallback_kernels = fallback->second;
  return summary;
}

} // namespace loupe
