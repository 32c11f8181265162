#pragma once

// TraceWriter appends records to a trace file, creating it or migrating it to the latest
// schema on open. Several processes may append to one file at once: while writers are open
// the file is in WAL mode and each waits up to 10 s for another's transaction; the last to
// close returns it to a single self-contained file. Each recordPass is one transaction, so
// a process killed mid-compile loses at most the pass in flight. Failures throw TraceError.
//
// The .db file alone is the whole trace at every checkpoint: finishing a compile and recording
// kernel stats copy the write-ahead log into it (checkpoint()), so a trace copied without its
// -wal file, or left by a process that never closed its writer, holds everything up to then.
//
// Calls may come from several threads (an executable reports its runs from the thread that
// runs it): each call holds the writer to itself.

#include "inspector/trace/trace_records.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace loupe {

class SqliteDb;

class TraceWriter {
public:
  // Opens or creates the trace at path. Refuses (TraceError) a file that is not a Loupe
  // trace, leaving it untouched, and a trace newer than this build.
  explicit TraceWriter(std::string path);
  ~TraceWriter();
  TraceWriter(TraceWriter&&) noexcept;

  const std::string& path() const;

  int64_t beginRun(const RunInfo& run);
  // The compile starts with status "running" until finishCompile.
  int64_t beginCompile(int64_t run_id, const CompileInfo& compile);
  // Then checkpoints: the compile's records are complete.
  void finishCompile(int64_t compile_id, const CompileOutcome& outcome);

  // Stores the pass and the snapshot it left. Identical snapshots are stored once.
  int64_t recordPass(int64_t compile_id, const PassRecord& pass);
  // Decisions belong to the pass that made them (and so to its compile).
  int64_t recordDecision(int64_t pass_id, const DecisionRecord& decision);

  void recordKernel(int64_t compile_id, const KernelRecord& kernel);
  // Check mode measures a kernel's error after the compile recorded it.
  void recordKernelMaxError(int64_t compile_id, std::string_view kernel_name, double max_error);
  // A generated kernel's build, once done (after the compile recorded the kernel): found in the
  // kernel cache or built by the host compiler, how long its library took, and what the device
  // compiler reported (empty: nothing; on the host).
  void recordKernelBuild(int64_t compile_id, std::string_view kernel_name, bool from_cache,
                         double build_ms, std::string_view resources = {});
  void recordBuffers(int64_t compile_id, const std::vector<BufferRecord>& buffers);
  // Replaces the compile's plan: record it again once the peak has been measured.
  void recordMemoryPlan(int64_t compile_id, const MemoryPlanRecord& plan);
  // Adds the layout of one binding, or replaces it (a later call measured more).
  void recordMemoryLayout(int64_t compile_id, const MemoryLayoutRecord& layout);
  // A run of the compile failed; then checkpoints.
  void recordRunError(int64_t compile_id, const RunErrorRecord& error);
  // Replaces the rows of these kernels (totals so far) in one transaction, then checkpoints.
  void recordKernelStats(int64_t compile_id, const std::vector<KernelStatsRecord>& kernels);

  // A bisection of the compile and its steps, in one transaction.
  int64_t recordBisection(int64_t compile_id, const BisectionRecord& bisection);
  // A reduction of the compile (`loupe reduce`).
  int64_t recordReduction(int64_t compile_id, const ReductionRecord& reduction);

  void recordGraphBreak(int64_t run_id, const GraphBreakRecord& graph_break);
  void recordGuard(int64_t compile_id, const GuardRecord& guard);
  // A compile's guards in one transaction: an entry of a large model has hundreds (a guard per
  // parameter), and a transaction each would cost more than the rest of the recording.
  void recordGuards(int64_t compile_id, const std::vector<GuardRecord>& guards);
  // Dynamo reports a failed guard on a later call, after the guard was recorded: marks the
  // compile's guards with this kind and expression failed. Returns how many rows changed.
  int64_t markGuardFailed(int64_t compile_id, std::string_view kind, std::string_view expr);
  void recordRecompile(int64_t compile_id, const RecompileRecord& recompile);
  // Replaces the compile's traced lines with these, in one transaction.
  void recordTracedLines(int64_t compile_id, const std::vector<TracedLine>& lines);
  void recordWarning(int64_t run_id, const WarningRecord& warning);
  // Replaces the compile's CUDA-graph totals with these.
  void recordCudaGraphStats(int64_t compile_id, const CudaGraphStatsRecord& stats);

  // Copies the write-ahead log into the .db file and empties it, as far as readers of the file
  // allow without waiting for them.
  void checkpoint();

  // Called inside recordPass's transaction after every row is written and before the commit,
  // so tests can kill the process exactly there.
  void setPassCommitHookForTesting(std::function<void()> hook);

private:
  std::unique_ptr<std::recursive_mutex> mutex_ = std::make_unique<std::recursive_mutex>();
  std::unique_ptr<SqliteDb> db_;
  std::function<void()> pass_commit_hook_;
};

} // namespace loupe
