// loupe-view-gen: writes a trace holding one compile of a generated graph (graph_generator.h)
// for the viewer's benchmark and big-graph tests.
//   loupe-view-gen --nodes 10000 --out /tmp/g10k.db
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include "gui/tools/graph_generator.h"
#include "inspector/trace/trace_writer.h"

namespace {

constexpr const char* kUsage =
    "usage: loupe-view-gen --nodes N --out TRACE.db\n"
    "  writes one compile of a generated N-node transformer-like graph\n"
    "  (module paths, fused groups, six passes, kernels, a memory plan)\n";

int usage(const std::string& problem) {
  std::cerr << "loupe-view-gen: " << problem << "\n" << kUsage;
  return 2;
}

} // namespace

int main(int argc, char** argv) {
  int nodes = 0;
  std::string out;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      return 0;
    }
    if (i + 1 >= argc) return usage("missing value after " + arg);
    if (arg == "--nodes")
      nodes = std::atoi(argv[++i]);
    else if (arg == "--out")
      out = argv[++i];
    else
      return usage("unknown argument " + arg);
  }
  if (nodes <= 0 || out.empty())
    return usage(nodes <= 0 ? "--nodes must be a positive number" : "--out is required");

  try {
    loupe::TraceWriter writer(out);
    const int64_t run =
        writer.beginRun({.command = "loupe-view-gen --nodes " + std::to_string(nodes)});
    const int64_t compile =
        writer.beginCompile(run, {.compile_key = "0/0",
                                  .frame_name = "forward",
                                  .frame_file = "model.py",
                                  .frame_line = 10,
                                  .graph_kind = "forward",
                                  .input_signature_json = R"([{"name": "x", "shape": [8, 64]}])"});
    double wallMs = 0;
    for (const loupe::PassRecord& pass : loupe::view::generatedPasses(nodes)) {
      writer.recordPass(compile, pass);
      wallMs += pass.info.wall_ms;
    }
    loupe::MemoryPlanRecord plan;
    writer.recordBuffers(compile, loupe::view::generatedBuffers(nodes, plan));
    writer.recordMemoryPlan(compile, plan);
    writer.finishCompile(compile, {.wall_ms = wallMs});
  } catch (const std::exception& e) {
    std::cerr << "loupe-view-gen: " << e.what() << "\n";
    return 1;
  }
  std::cout << "wrote " << out << " (" << nodes << " nodes)\n";
  return 0;
}
