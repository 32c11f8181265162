#include "inspector/recorder/trace_recorder.h"

#include "compiler/ir/error.h"
#include "compiler/ir/printer.h"
#include "compiler/pass/pass.h"
#include "compiler/pass/plan.h"
#include "driver/compile_graph.h"

namespace loupe {

namespace {

void appendNodes(const Graph& graph, const std::string& fusedGroup, std::vector<NodeRecord>& out) {
  for (Node* node : graph.nodes()) {
    NodeRecord r;
    r.name = node->numResults() ? node->result(0)->name() : "";
    r.op = node->op();
    for (size_t i = 0; i < node->numResults(); ++i)
      r.result_types += (i ? ", " : "") + node->result(i)->type().str();
    if (node->numResults() && node->result(0)->type().isTensor()) {
      const TensorType& t = node->result(0)->tensorType();
      r.dtype = std::string(dtypeName(t.dtype));
      std::vector<std::string> dims;
      for (const auto& d : t.shape)
        dims.push_back(d.str());
      r.shape = dims;
    }
    if (!node->loc().file.empty()) {
      r.file = node->loc().file;
      r.line = node->loc().line;
    }
    if (!node->loc().module_path.empty()) r.module_path = node->loc().module_path;
    if (!fusedGroup.empty()) r.fused_group = fusedGroup;
    if (const std::string* kernel = kernelNameOf(*node)) r.kernel = *kernel;
    std::string groupName = r.name; // by value: `out` grows while the body is appended
    out.push_back(std::move(r));
    if (node->hasBody()) appendNodes(*node->body(), groupName, out);
  }
}

} // namespace

SnapshotRecord snapshotOf(const Graph& graph) {
  // Print first: printing numbers unnamed values, and node rows must use the printed names.
  SnapshotRecord s;
  s.lir = toText(graph);
  appendNodes(graph, "", s.nodes);
  return s;
}

void TraceRecorder::writePass(PassInfo info, const Graph& graph) {
  info.ordinal = ordinal_++;
  PassRecord record{std::move(info), snapshotOf(graph)};
  int64_t passId = writer_.recordPass(compileId_, record);
  for (const Decision& d : pendingDecisions_) {
    DecisionRecord record{d.ordinal, d.kind, d.description, d.nodes, d.applied};
    if (!d.ruleFile.empty()) {
      record.rule_file = std::string(d.ruleFile);
      record.rule_line = d.ruleLine;
    }
    writer_.recordDecision(passId, record);
  }
  pendingDecisions_.clear();
}

void TraceRecorder::runBeforePass(const Pass&, const Graph& graph) {
  nodesBefore_ = static_cast<int64_t>(graph.numNodesRecursive());
}

void TraceRecorder::runAfterPass(const Pass&, const Graph& graph, const PassRunInfo& run) {
  PassInfo info;
  info.name = run.pass;
  info.wall_ms = run.wallMs;
  info.changed = run.graphChanged;
  info.plan_changed = run.planChanged;
  info.nodes_before = static_cast<int64_t>(run.nodesBefore);
  info.nodes_after = static_cast<int64_t>(run.nodesAfter);
  info.decisions = run.decisions;
  writePass(std::move(info), graph);
}

void TraceRecorder::runAfterPassFailed(const Pass& pass, const Graph& graph,
                                       const std::string& error) {
  PassInfo info;
  info.name = std::string(pass.name());
  info.status = "failed";
  info.nodes_before = nodesBefore_;
  info.error_message = error;
  info.nodes_after = static_cast<int64_t>(graph.numNodesRecursive());
  info.decisions = static_cast<int>(pendingDecisions_.size());
  // The graph as the failing pass left it: exactly what a person debugging the failure needs.
  writePass(std::move(info), graph);
}

void TraceRecorder::recordRejectedInput(std::string_view lir, const Graph* parsed,
                                        const std::string& error) {
  PassInfo info;
  info.name = "import";
  info.status = "failed";
  info.error_message = error;
  info.ordinal = ordinal_++;
  SnapshotRecord snapshot;
  if (parsed) {
    snapshot = snapshotOf(*parsed);
    info.nodes_before = info.nodes_after = static_cast<int64_t>(parsed->numNodesRecursive());
  } else {
    snapshot.lir = std::string(lir); // unparsable: the text as given, without node rows
  }
  writer_.recordPass(compileId_, PassRecord{std::move(info), std::move(snapshot)});
}

void TraceRecorder::finishCompile(const CompileResult& result, std::string_view failureStatus,
                                  std::string_view lir) {
  if (result.ok()) {
    // Each generated kernel, once built: from the kernel cache or built, and how long. A
    // background build still running has none yet; the call after it finishes records them.
    if (result.executable)
      for (const auto& [name, build] : result.executable->kernelBuilds())
        writer_.recordKernelBuild(compileId_, name, build.fromCache, build.buildMs,
                                  build.resources);
    writer_.finishCompile(compileId_,
                          CompileOutcome{"ok", std::nullopt, std::nullopt, result.compileMs});
    return;
  }
  const CompileError& error = *result.error;
  if (error.pass == "import") recordRejectedInput(lir, result.graph.get(), error.message);
  std::optional<std::string> pass;
  if (!error.pass.empty()) pass = error.pass;
  writer_.finishCompile(
      compileId_, CompileOutcome{std::string(failureStatus), error.message, pass, std::nullopt});
}

void TraceRecorder::onDecision(const Decision& decision) {
  pendingDecisions_.push_back(decision);
}

void TraceRecorder::onKernelChoice(const KernelChoice& choice) {
  KernelRecord r;
  r.name = choice.name;
  r.kind = std::string(kernelKindName(choice.kind));
  r.target = choice.target;
  r.op_summary = choice.op + (choice.implementation.empty() ? "" : " via " + choice.implementation);
  r.reason = choice.reason;
  for (const auto& alt : choice.rejected)
    r.alternatives.push_back({std::string(kernelKindName(alt.kind)), alt.target, alt.why});
  r.fused_nodes = choice.fusedOps;
  r.source = choice.source;
  writer_.recordKernel(compileId_, r);
}

void TraceRecorder::onMemoryPlan(const MemoryPlan& plan) {
  // Symbolic sizes are stored as -1 bytes plus the expression.
  auto bytesOf = [](const SymExpr& e) { return e.constant().value_or(-1); };
  auto exprOf = [](const SymExpr& e) -> std::optional<std::string> {
    if (e.isConstant()) return std::nullopt;
    return e.str();
  };
  std::vector<BufferRecord> buffers;
  for (const auto& b : plan.buffers) {
    BufferRecord r;
    r.name = b.value;
    r.size_bytes = bytesOf(b.bytes);
    if (b.offset >= 0) r.offset = b.offset;
    r.first_use = b.firstUse;
    r.last_use = b.lastUse;
    r.is_graph_input = b.graphInput;
    r.is_graph_output = b.graphOutput;
    r.size_expr = exprOf(b.bytes);
    buffers.push_back(std::move(r));
  }
  writer_.recordBuffers(compileId_, buffers);
  MemoryPlanRecord record;
  record.arena_bytes = bytesOf(plan.arenaBytes);
  record.peak_bytes = bytesOf(plan.peakBytes);
  record.arena_expr = exprOf(plan.arenaBytes);
  record.peak_expr = exprOf(plan.peakBytes);
  record.output_bytes = bytesOf(plan.outputBytes);
  record.output_expr = exprOf(plan.outputBytes);
  writer_.recordMemoryPlan(compileId_, record);
  plan_ = record;
}

void TraceRecorder::onMemoryUse(const MemoryUse& use) {
  MemoryLayoutRecord record;
  record.bindings.insert(use.bindings.begin(), use.bindings.end());
  record.arena_bytes = use.layout.arenaBytes;
  record.output_bytes = use.layout.outputBytes;
  record.peak_bytes = use.layout.peakBytes;
  record.measured_peak_bytes = use.measuredPeakBytes;
  for (size_t i = 0; i < use.plan->buffers.size(); ++i) {
    const std::string& name = use.plan->buffers[i].value;
    record.sizes[name] = use.layout.bytes[i];
    if (use.layout.offsets[i] >= 0) record.offsets[name] = use.layout.offsets[i];
  }
  try {
    writer_.recordMemoryLayout(compileId_, record);
    // A static plan's row carries its measured peak too, beside the planned one.
    if (plan_ && plan_->peak_bytes >= 0 && use.bindings.empty()) {
      plan_->measured_peak_bytes = use.measuredPeakBytes;
      writer_.recordMemoryPlan(compileId_, *plan_);
    }
  } catch (const std::exception& e) {
    if (runRecordError_.empty()) runRecordError_ = e.what();
  }
}

void TraceRecorder::recordRunError(const std::exception& error) {
  RunErrorRecord record{.message = error.what()};
  if (const auto* located = dynamic_cast<const Error*>(&error);
      located && !located->context().node.empty())
    record.node = located->context().node;
  writer_.recordRunError(compileId_, record);
}

std::vector<KernelStatsRecord> kernelStatsRecords(const ExecutionStats& stats) {
  std::vector<KernelStatsRecord> records;
  for (const auto& [name, kernel] : stats.kernels) {
    std::optional<std::string> launch;
    if (!kernel.launch.empty()) launch = kernel.launch;
    KernelStatsRecord record{.kernel = name,
                             .implementation = kernel.implementation,
                             .calls = kernel.calls,
                             .total_ms = kernel.totalMs,
                             .scratch_bytes = kernel.scratchBytes,
                             .launch = launch};
    if (kernel.profileRuns > 0) {
      record.profile_ms = kernel.profileMs;
      record.profile_runs = kernel.profileRuns;
      record.bytes = kernel.bytes;
      record.flops = kernel.flops;
      record.peak_fraction = kernel.peakFraction;
      if (!kernel.bound.empty()) record.bound = kernel.bound;
    }
    records.push_back(std::move(record));
  }
  return records;
}

void TraceRecorder::onKernelStats(const ExecutionStats& stats) {
  std::vector<KernelStatsRecord> records = kernelStatsRecords(stats);
  try {
    writer_.recordKernelStats(compileId_, records);
  } catch (const std::exception& e) {
    if (runRecordError_.empty()) runRecordError_ = e.what();
  }
}

} // namespace loupe
