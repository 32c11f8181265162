// The trace recorder: a PassInstrumentation that writes every pass's snapshot, every decision,
// every kernel choice and the memory plan of one compile into a trace, and the
// RunInstrumentation of the compile's executable, which writes what ran: each binding's memory
// layout and measured peak, and the per-kernel stats. It is the only place where the compiler's
// events meet the store, which keeps compiler/ free of sqlite.
#pragma once

#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/pass/instrumentation.h"
#include "compiler/pass/run_instrumentation.h"
#include "inspector/trace/trace_records.h"
#include "inspector/trace/trace_writer.h"

namespace loupe {

struct CompileResult;

class TraceRecorder : public PassInstrumentation, public RunInstrumentation {
public:
  TraceRecorder(TraceWriter& writer, int64_t compileId) : writer_(writer), compileId_(compileId) {}

  void runBeforePass(const Pass& pass, const Graph& graph) override;
  void runAfterPass(const Pass& pass, const Graph& graph, const PassRunInfo& info) override;
  void runAfterPassFailed(const Pass& pass, const Graph& graph, const std::string& error) override;
  void onDecision(const Decision& decision) override;
  void onKernelChoice(const KernelChoice& choice) override;
  void onMemoryPlan(const MemoryPlan& plan) override;
  bool wantsDecisionText() const override { return true; } // the trace keeps every description

  // Run events arrive while a graph runs: a failure to write one is not the run's failure, so
  // it is kept (runRecordError) rather than thrown.
  void onMemoryUse(const MemoryUse& use) override;
  void onKernelStats(const ExecutionStats& stats) override;
  const std::string& runRecordError() const { return runRecordError_; }
  // A run of the compiled graph failed with `error` (a loupe::Error names the node).
  void recordRunError(const std::exception& error);

  // The input graph failed to parse or verify, before any pass ran: records a failed pass named
  // "import" holding the graph (`parsed` when it parsed, else the text as given) and the error,
  // so the trace keeps the graph a failure is about.
  void recordRejectedInput(std::string_view lir, const Graph* parsed, const std::string& error);

  // Ends the compile's record with the driver's result: "ok" and its wall time, or
  // `failureStatus` ("error", "eager_fallback") with the error and the failed pass. An input
  // rejected before any pass ran is recorded too (recordRejectedInput): the graph when it
  // parsed, else `lir`, the text as given. Called again (a background kernel build finished),
  // it replaces the outcome.
  void finishCompile(const CompileResult& result, std::string_view failureStatus,
                     std::string_view lir = {});

  int64_t compileId() const { return compileId_; }
  int passesRecorded() const { return ordinal_; }

private:
  void writePass(PassInfo info, const Graph& graph);

  TraceWriter& writer_;
  int64_t compileId_;
  int ordinal_ = 0;                        // passes recorded so far in this compile
  int64_t nodesBefore_ = 0;                // of the pass in flight, for a failed pass's record
  std::vector<Decision> pendingDecisions_; // made by the pass in flight, written with it
  std::optional<MemoryPlanRecord> plan_;   // as last recorded
  std::string runRecordError_;             // the first run event that could not be written
};

// An executable's kernel stats as the trace's per-kernel rows (profile columns only for the
// kernels that were profiled).
std::vector<KernelStatsRecord> kernelStatsRecords(const ExecutionStats& stats);

// The graph as stored in a trace: its .lir text and one row per node (fused bodies included,
// each row naming its enclosing fused node).
SnapshotRecord snapshotOf(const Graph& graph);

} // namespace loupe
