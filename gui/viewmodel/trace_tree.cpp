#include "gui/viewmodel/trace_tree.h"

#include <algorithm>
#include <exception>
#include <tuple>

#include "compiler/ir/parser.h"
#include "inspector/diff/compile_selector.h"
#include "inspector/trace/content_hash.h"
#include "inspector/trace/trace_error.h"

namespace loupe::view {
namespace {

// Messages are shown on one line of the window: multi-line context (a parse error's source
// excerpt) is folded in.
std::string oneLine(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

// The user's inputs with their shapes, parameters and buffers counted, as the differ labels a
// compile (diff::describeInputs), so the tree and the diff panel read alike.
std::string inputSignature(const TraceReader& reader, int64_t compileId) {
  return diff::describeInputs(diff::compileInputs(reader, compileId));
}

std::string recompileReason(const TraceReader& reader, int64_t compileId) {
  const std::vector<RecompileRecord> recompiles = reader.recompiles(compileId);
  if (recompiles.empty()) return {};
  const RecompileRecord& first = recompiles.front();
  return first.failed_guard ? "guard failed: " + *first.failed_guard : first.reason;
}

CompileItem compileItem(const TraceReader& reader, const CompileRow& row) {
  CompileItem item{.compileId = row.id,
                   .compileKey = row.info.compile_key,
                   .graphKind = row.info.graph_kind,
                   .inputSignature = inputSignature(reader, row.id),
                   .recompileReason = recompileReason(reader, row.id),
                   .status = row.outcome.status,
                   .wallMs = row.outcome.wall_ms};
  item.label = item.compileKey + " " + item.graphKind;
  if (!item.inputSignature.empty()) item.label += "  " + item.inputSignature;
  if (item.status != "ok") item.label += "  [" + item.status + "]";
  for (const PassRow& pass : reader.passes(row.id))
    item.passes.push_back({pass.id, pass.info, pass.snapshot_id});
  return item;
}

RunItem runItem(const TraceReader& reader, const RunRow& run) {
  RunItem item{.runId = run.id,
               .info = run.info,
               .graphBreaks = static_cast<int64_t>(reader.graphBreaks(run.id).size())};
  item.label = "run " + std::to_string(run.id) + "  " + run.info.started_at;
  if (!run.info.command.empty()) item.label += "  " + run.info.command;
  for (const CompileRow& row : reader.compiles(run.id)) {
    auto sameFrame = [&](const FrameItem& f) {
      return std::tie(f.name, f.file, f.line) ==
             std::tie(row.info.frame_name, row.info.frame_file, row.info.frame_line);
    };
    auto frame = std::find_if(item.frames.begin(), item.frames.end(), sameFrame);
    if (frame == item.frames.end()) {
      FrameItem added{
          .name = row.info.frame_name, .file = row.info.frame_file, .line = row.info.frame_line};
      added.label = added.name.empty() ? "(unnamed frame)" : added.name;
      if (!added.file.empty())
        added.label += " (" + added.file + ":" + std::to_string(added.line) + ")";
      item.frames.push_back(std::move(added));
      frame = std::prev(item.frames.end());
    }
    frame->compiles.push_back(compileItem(reader, row));
  }
  return item;
}

} // namespace

const CompileItem* TraceTree::findCompile(int64_t compileId) const {
  for (const RunItem& run : runs)
    for (const FrameItem& frame : run.frames)
      for (const CompileItem& compile : frame.compiles)
        if (compile.compileId == compileId) return &compile;
  return nullptr;
}

OpenedTrace openTrace(const std::string& path) noexcept {
  OpenedTrace opened;
  try {
    auto reader = std::make_shared<const TraceReader>(path);
    for (const RunRow& run : reader->runs())
      opened.tree.runs.push_back(runItem(*reader, run));
    opened.reader = std::move(reader);
  } catch (const TraceError& e) {
    opened.tree = {};
    opened.error = oneLine(e.what()); // already starts with the path
  } catch (const std::exception& e) {
    opened.tree = {};
    opened.error = oneLine(path + ": " + e.what());
  }
  return opened;
}

LoadedSnapshot loadSnapshot(const TraceReader& reader, int64_t snapshotId) noexcept {
  LoadedSnapshot loaded;
  const std::string where = reader.path() + " snapshot " + std::to_string(snapshotId);
  try {
    SnapshotRecord record = reader.snapshot(snapshotId);
    loaded.model = GraphModel::fromText(record.lir, where);
    loaded.hash = contentHash(record.lir);
  } catch (const TraceError& e) {
    loaded.error = oneLine(e.what());
  } catch (const std::exception& e) {
    loaded.error = oneLine(where + ": " + e.what());
  }
  return loaded;
}

} // namespace loupe::view
