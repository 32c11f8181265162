// `loupe export`: one snapshot of a trace as Graphviz dot or JSON.
#include <fstream>
#include <iostream>

#include "compiler/ir/parser.h"
#include "inspector/export/graph_export.h"
#include "inspector/trace/trace_error.h"
#include "inspector/trace/trace_reader.h"
#include "tools/loupe/commands.h"

namespace loupe::cli {

int runExport(const ExportOptions& options) {
  if (options.format != "dot" && options.format != "json") {
    printError("export: --format must be dot or json, not '" + options.format + "'");
    return 2;
  }
  TraceReader reader(options.trace);
  auto compiles = reader.compiles();
  if (compiles.empty()) throw TraceError(options.trace, "the trace holds no compiles to export");
  int64_t compileId = options.compile.value_or(compiles.front().id);
  auto passes = reader.passes(compileId); // throws naming the compile when it does not exist
  if (passes.empty())
    throw TraceError(options.trace,
                     "compile " + std::to_string(compileId) + " has no recorded passes");
  std::string passName = options.pass.empty() ? passes.back().info.name : options.pass;
  SnapshotRecord snapshot = reader.snapshotAfterPass(compileId, passName);

  // Snapshots are text the store received from a compile; parse them like any other input.
  std::string where = options.trace + ":compile=" + std::to_string(compileId) + ":pass=" + passName;
  auto graph = parseGraph(snapshot.lir, where);
  std::string text = options.format == "dot" ? exportDot(*graph) : exportJson(*graph);
  if (options.output.empty() || options.output == "-") {
    std::cout << text;
    return 0;
  }
  std::ofstream out(options.output, std::ios::binary);
  if (!(out << text)) {
    printError("export: cannot write " + options.output);
    return 1;
  }
  return 0;
}

} // namespace loupe::cli
