// The viewer's navigation tree: runs → frames → compiles → passes, read once when a trace is
// opened so that no panel queries sqlite inside a frame. Opening and loading report failures
// as one-line messages naming the file, never as exceptions, so a corrupt, foreign or
// newer-schema trace shows an error in the window and nothing else breaks. Opening never
// executes anything stored in the trace (TraceReader treats it as untrusted input).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gui/viewmodel/graph_model.h"
#include "inspector/trace/trace_reader.h"

namespace loupe::view {

struct PassItem {
  int64_t passId = 0;
  PassInfo info;                     // name, ordinal, wall time, changed, node counts, status
  std::optional<int64_t> snapshotId; // absent when the pass failed before leaving a graph
};

struct CompileItem {
  int64_t compileId = 0;
  std::string compileKey;      // Dynamo's "0/1"
  std::string graphKind;       // forward | backward | inference | graph
  std::string inputSignature;  // readable: "x=[8,64] +4 parameters" (diff::describeInputs)
  std::string recompileReason; // empty for a first compile; the failed guard when known
  std::string status;          // ok | error | eager_fallback | running
  std::optional<double> wallMs;
  std::string label;            // one line for the tree: "0/1 forward  x=[8,64]"
  std::vector<PassItem> passes; // in pipeline order
};

struct FrameItem {
  std::string name, file;
  int line = 0;
  std::string label;                 // "forward (model.py:12)"
  std::vector<CompileItem> compiles; // in the order they began
};

struct RunItem {
  int64_t runId = 0;
  RunInfo info;
  std::string label; // "run 1  2026-11-22T10:00:00Z  python train.py"
  int64_t graphBreaks = 0;
  std::vector<FrameItem> frames; // in the order of their first compile
};

struct TraceTree {
  std::vector<RunItem> runs;

  const CompileItem* findCompile(int64_t compileId) const; // null when absent
};

// An opened trace: the reader (for the panels' own queries) and its tree, or the error.
struct OpenedTrace {
  std::shared_ptr<const TraceReader> reader; // null on error
  TraceTree tree;
  std::string error; // one line naming the file; empty on success
  explicit operator bool() const { return reader != nullptr; }
};

OpenedTrace openTrace(const std::string& path) noexcept;

// A snapshot parsed into a GraphModel, with the content hash that keys its cached layouts.
struct LoadedSnapshot {
  std::shared_ptr<const GraphModel> model; // null on error
  std::string hash;                        // of the .lir text; equal texts give equal hashes
  std::string error; // one line naming the file and snapshot; empty on success
  explicit operator bool() const { return model != nullptr; }
};

LoadedSnapshot loadSnapshot(const TraceReader& reader, int64_t snapshotId) noexcept;

} // namespace loupe::view
