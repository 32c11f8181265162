#include "python/trace_binding.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "inspector/recorder/run_info.h"
#include "inspector/recorder/trace_recorder.h"

namespace loupe::binding {
namespace {

std::vector<StackFrame> toStack(const std::vector<PyFrame>& frames) {
  std::vector<StackFrame> stack;
  for (const auto& [file, line, function, code] : frames)
    stack.push_back(StackFrame{.file = file, .line = line, .function = function, .code = code});
  return stack;
}

} // namespace

int64_t Trace::beginRun(const std::string& command, const std::string& torchVersion,
                        const std::string& optionsJson, std::optional<int64_t> rank,
                        std::optional<int64_t> worldSize,
                        std::optional<std::string> processGroupBackend) {
  RunInfo run = thisProcessRun(command, torchVersion, optionsJson);
  run.rank = rank;
  run.world_size = worldSize;
  run.process_group_backend = std::move(processGroupBackend);
  return writer_.beginRun(run);
}

void Trace::finishCompile(int64_t compileId, const std::string& status,
                          std::optional<std::string> message, std::optional<std::string> pass,
                          std::optional<double> wallMs) {
  writer_.finishCompile(compileId, CompileOutcome{status, message, pass, wallMs});
}

void Trace::recordRejectedGraph(int64_t compileId, const std::string& text,
                                const std::string& error) {
  TraceRecorder(writer_, compileId).recordRejectedInput(text, nullptr, error);
}

void Trace::recordWarning(int64_t runId, const std::string& message,
                          std::optional<int64_t> compileId) {
  writer_.recordWarning(runId, WarningRecord{.compile_id = compileId, .message = message});
}

void Trace::recordCudaGraphStats(int64_t compileId, const std::string& chosenBy, int64_t captures,
                                 int64_t replays, int64_t uncapturedCalls,
                                 std::optional<std::string> failure) {
  writer_.recordCudaGraphStats(compileId, CudaGraphStatsRecord{.chosen_by = chosenBy,
                                                               .captures = captures,
                                                               .replays = replays,
                                                               .uncaptured_calls = uncapturedCalls,
                                                               .failure = std::move(failure)});
}

void Trace::recordGraphBreak(int64_t runId, std::optional<int64_t> compileId,
                             const std::string& frameName, const std::string& reason,
                             const std::vector<PyFrame>& userStack) {
  writer_.recordGraphBreak(runId, GraphBreakRecord{.compile_id = compileId,
                                                   .frame_name = frameName,
                                                   .reason = reason,
                                                   .user_stack = toStack(userStack)});
}

void Trace::recordGuards(
    int64_t compileId,
    const std::vector<std::tuple<std::string, std::string, std::vector<PyFrame>>>& guards) {
  std::vector<GuardRecord> records;
  records.reserve(guards.size());
  for (const auto& [kind, expr, userStack] : guards)
    records.push_back(GuardRecord{.kind = kind, .expr = expr, .user_stack = toStack(userStack)});
  writer_.recordGuards(compileId, records);
}

void Trace::recordRecompile(int64_t compileId, const std::string& previousCompileKey,
                            const std::string& reason, std::optional<std::string> failedGuard) {
  writer_.recordRecompile(compileId, RecompileRecord{.previous_compile_key = previousCompileKey,
                                                     .reason = reason,
                                                     .failed_guard = std::move(failedGuard)});
}

void Trace::recordTracedLines(
    int64_t compileId, const std::vector<std::tuple<std::string, int, std::string, int>>& lines) {
  std::vector<TracedLine> records;
  records.reserve(lines.size());
  for (const auto& [file, line, function, depth] : lines)
    records.push_back(TracedLine{.file = file, .line = line, .function = function, .depth = depth});
  writer_.recordTracedLines(compileId, records);
}

void bindTrace(nb::module_& m) {
  nb::class_<CompileInfo>(m, "CompileInfo")
      .def(nb::init<>())
      .def_rw("compile_key", &CompileInfo::compile_key)
      .def_rw("frame_name", &CompileInfo::frame_name)
      .def_rw("frame_file", &CompileInfo::frame_file)
      .def_rw("frame_line", &CompileInfo::frame_line)
      .def_rw("graph_kind", &CompileInfo::graph_kind)
      .def_rw("input_signature_json", &CompileInfo::input_signature_json);

  nb::class_<Trace>(m, "Trace")
      .def(nb::init<const std::string&>(), nb::arg("path"))
      .def_prop_ro("path", &Trace::path)
      .def("begin_run", &Trace::beginRun, nb::arg("command"), nb::arg("torch_version"),
           nb::arg("options_json") = "{}", nb::arg("rank") = nb::none(),
           nb::arg("world_size") = nb::none(), nb::arg("process_group_backend") = nb::none())
      .def("begin_compile", &Trace::beginCompile, nb::arg("run_id"), nb::arg("compile"))
      .def("finish_compile", &Trace::finishCompile, nb::arg("compile_id"), nb::arg("status"),
           nb::arg("message") = nb::none(), nb::arg("failed_pass") = nb::none(),
           nb::arg("wall_ms") = nb::none())
      .def("record_rejected_graph", &Trace::recordRejectedGraph, nb::arg("compile_id"),
           nb::arg("text"), nb::arg("error"))
      .def("record_warning", &Trace::recordWarning, nb::arg("run_id"), nb::arg("message"),
           nb::arg("compile_id").none() = nb::none())
      .def("record_cuda_graph_stats", &Trace::recordCudaGraphStats, nb::arg("compile_id"),
           nb::arg("chosen_by"), nb::arg("captures"), nb::arg("replays"),
           nb::arg("uncaptured_calls"), nb::arg("failure").none() = nb::none(),
           "Replaces the compile's CUDA-graph totals (chosen_by: 'option' or "
           "'launch-planning').")
      .def("record_graph_break", &Trace::recordGraphBreak, nb::arg("run_id"),
           nb::arg("compile_id").none(), nb::arg("frame_name"), nb::arg("reason"),
           nb::arg("user_stack"),
           "user_stack: (file, line, function, code) tuples, outermost first; compile_id: the "
           "compile of the graph before the break, or None for a run-level break.")
      .def("record_guards", &Trace::recordGuards, nb::arg("compile_id"), nb::arg("guards"),
           "Records (kind, expr, user_stack) per guard in one transaction.")
      .def("record_traced_lines", &Trace::recordTracedLines, nb::arg("compile_id"),
           nb::arg("lines"),
           "Records the (file, line, function, inline depth) Dynamo traced, in order, in one "
           "transaction; replaces the compile's earlier ones.")
      .def("mark_guard_failed", &Trace::markGuardFailed, nb::arg("compile_id"), nb::arg("kind"),
           nb::arg("expr"),
           "Sets failed=1 on the compile's guards with this kind and expr; returns how many.")
      .def(
          "checkpoint", [](Trace& trace) { trace.writer().checkpoint(); },
          "Copies the write-ahead log into the .db file, so that the file alone is the whole "
          "trace (the backend calls it at exit).")
      .def("record_recompile", &Trace::recordRecompile, nb::arg("compile_id"),
           nb::arg("previous_compile_key"), nb::arg("reason"),
           nb::arg("failed_guard").none() = nb::none());
}

} // namespace loupe::binding
