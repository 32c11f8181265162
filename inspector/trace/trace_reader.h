#pragma once

// TraceReader answers questions about a trace file without ever writing it: it opens the
// file read-only and treats it as untrusted input (nothing stored in it is executed; a
// malformed value is a TraceError, never a crash). A trace with an older schema is
// upgraded in a private in-memory copy, so old traces stay readable and the file is not
// touched. Reading a trace that a writer is still appending to is safe: each call sees
// every pass committed before it (an older-schema trace is read as it was when opened).

#include "inspector/trace/trace_records.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace loupe {

class SqliteDb;

class TraceReader {
public:
  // Row counts of the whole trace.
  struct Summary {
    int64_t runs = 0;
    int64_t compiles = 0;
    int64_t passes = 0;
    int64_t snapshots = 0; // distinct snapshots
    int64_t nodes = 0;     // rows of distinct snapshots
    int64_t decisions = 0;
    int64_t graph_breaks = 0;
    int64_t guards = 0;
    int64_t recompiles = 0;
    int64_t warnings = 0;
    std::map<std::string, int64_t> kernels_by_kind;
    int64_t fallback_kernels = 0;

    bool operator==(const Summary&) const = default;
  };

  // Throws TraceError for a missing file, a file that is not a Loupe trace, a trace newer
  // than this build, or a corrupt one.
  explicit TraceReader(std::string path);
  ~TraceReader();
  TraceReader(TraceReader&&) noexcept;
  TraceReader& operator=(TraceReader&&) noexcept;

  const std::string& path() const;
  // The schema version of the file on disk (it may be older than the one read through).
  int fileSchemaVersion() const { return file_schema_version_; }

  std::vector<RunRow> runs() const;
  // Compiles of one run, or of all runs; in the order they began.
  std::vector<CompileRow> compiles(std::optional<int64_t> run_id = std::nullopt) const;
  CompileRow compile(int64_t compile_id) const;

  // In pipeline order.
  std::vector<PassRow> passes(int64_t compile_id) const;
  SnapshotRecord snapshot(int64_t snapshot_id) const;
  // The graph after the last run of pass_name in the compile. The error for a missing pass
  // lists the compile's passes.
  SnapshotRecord snapshotAfterPass(int64_t compile_id, std::string_view pass_name) const;
  // In decision order.
  std::vector<DecisionRow> decisions(int64_t compile_id) const;

  std::vector<KernelRecord> kernels(int64_t compile_id) const;
  std::vector<BufferRecord> buffers(int64_t compile_id) const;
  std::optional<MemoryPlanRecord> memoryPlan(int64_t compile_id) const;
  // One per binding the compile ran at, in the order they were first recorded.
  std::vector<MemoryLayoutRecord> memoryLayouts(int64_t compile_id) const;
  // In the order they happened.
  std::vector<RunErrorRecord> runErrors(int64_t compile_id) const;
  // Slowest first (total time), then by name.
  std::vector<KernelStatsRecord> kernelStats(int64_t compile_id) const;
  // How the compile replayed as CUDA graphs; none when it never did (or the trace is older).
  std::optional<CudaGraphStatsRecord> cudaGraphStats(int64_t compile_id) const;

  // Bisections of one compile, or of every compile; in the order they were recorded.
  std::vector<BisectionRow> bisections(std::optional<int64_t> compile_id = std::nullopt) const;
  // Reductions of one compile, or of every compile; in the order they were recorded.
  std::vector<ReductionRow> reductions(std::optional<int64_t> compile_id = std::nullopt) const;

  std::vector<GraphBreakRecord> graphBreaks(int64_t run_id) const;
  std::vector<GuardRecord> guards(int64_t compile_id) const;
  std::vector<RecompileRecord> recompiles(int64_t compile_id) const;
  // In the order traced; none for a compile recorded without them (or before schema 13).
  std::vector<TracedLine> tracedLines(int64_t compile_id) const;
  std::vector<WarningRecord> warnings(int64_t run_id) const;

  Summary summary() const;

private:
  std::unique_ptr<SqliteDb> db_;
  int file_schema_version_ = 0;
};

} // namespace loupe
