// The `Trace` class of loupe._C: one process's connection to a trace file, through which the
// backend records its runs, compiles, graph breaks, guards and recompiles (docs/trace-schema.md).
// CompiledGraph and bisect record into it too.
#pragma once

#include <nanobind/nanobind.h>

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "inspector/trace/trace_writer.h"

namespace loupe::binding {

namespace nb = nanobind;

// A user stack frame as Python hands it over: (file, line, function, source line).
using PyFrame = std::tuple<std::string, int, std::string, std::string>;

// One process's connection to a trace file.
class Trace {
public:
  explicit Trace(const std::string& path) : writer_(path) {}

  // rank, worldSize and processGroupBackend: the process's place in a torch.distributed job,
  // when the adapter knows it (traces.py).
  int64_t beginRun(const std::string& command, const std::string& torchVersion,
                   const std::string& optionsJson, std::optional<int64_t> rank = std::nullopt,
                   std::optional<int64_t> worldSize = std::nullopt,
                   std::optional<std::string> processGroupBackend = std::nullopt);
  int64_t beginCompile(int64_t runId, const CompileInfo& compile) {
    return writer_.beginCompile(runId, compile);
  }
  // A compile the adapter ends itself (it failed before the binding compiled it).
  void finishCompile(int64_t compileId, const std::string& status,
                     std::optional<std::string> message, std::optional<std::string> pass,
                     std::optional<double> wallMs);

  // A graph the adapter could not convert to .lir: kept as the compile's failed "import" pass,
  // `text` being the FX graph's code.
  void recordRejectedGraph(int64_t compileId, const std::string& text, const std::string& error);

  void recordWarning(int64_t runId, const std::string& message, std::optional<int64_t> compileId);
  void recordCudaGraphStats(int64_t compileId, const std::string& chosenBy, int64_t captures,
                            int64_t replays, int64_t uncapturedCalls,
                            std::optional<std::string> failure);
  void recordGraphBreak(int64_t runId, std::optional<int64_t> compileId,
                        const std::string& frameName, const std::string& reason,
                        const std::vector<PyFrame>& userStack);
  // (kind, expr, user stack) per guard, in one transaction.
  void recordGuards(
      int64_t compileId,
      const std::vector<std::tuple<std::string, std::string, std::vector<PyFrame>>>& guards);
  // Dynamo reports a failed guard on a later call, after the guard was recorded.
  int64_t markGuardFailed(int64_t compileId, const std::string& kind, const std::string& expr) {
    return writer_.markGuardFailed(compileId, kind, expr);
  }
  void recordRecompile(int64_t compileId, const std::string& previousCompileKey,
                       const std::string& reason, std::optional<std::string> failedGuard);

  // (file, line, function, inline depth) per line Dynamo traced, in order; replaces any.
  void recordTracedLines(int64_t compileId,
                         const std::vector<std::tuple<std::string, int, std::string, int>>& lines);

  TraceWriter& writer() { return writer_; }
  const std::string& path() const { return writer_.path(); }

private:
  TraceWriter writer_;
};

// Adds CompileInfo and Trace to the module.
void bindTrace(nb::module_& m);

} // namespace loupe::binding
