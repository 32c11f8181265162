// `loupe`: the command-line front end to traces and graphs. Subcommands live in cmd_*.cpp;
// this file only declares the options and maps errors to exit codes (0 ok, 1 failed, 2 usage).
#include <CLI/CLI.hpp>
#include <iostream>

#include "compiler/ir/error.h"
#include "inspector/cli/commands.h"
#include "inspector/trace/trace_error.h"

namespace loupe::cli {
void printError(const std::string& message) {
  std::cerr << "loupe: error: " << message << "\n";
}
} // namespace loupe::cli

int main(int argc, char** argv) {
  using namespace loupe::cli;
  CLI::App app{"loupe: inspect Loupe traces and run Loupe graphs.\n"
               "A trace is an sqlite file written by torch.compile(backend=\"loupe\") or `loupe "
               "run --trace`;\n"
               "its schema is documented in docs/trace-schema.md."};
  app.set_version_flag("--version", std::string("loupe ") + LOUPE_VERSION);
  app.require_subcommand(1);

  ShowOptions show;
  auto* showCmd = app.add_subcommand(
      "show", "Summarise a trace: runs, compiles, passes and counts; or print one snapshot");
  showCmd->add_option("trace", show.trace, "Trace file (.db)")->required();
  showCmd->add_flag(
      "--json", show.json,
      "One JSON document: counts as top-level keys (compiles, passes, snapshots, nodes, "
      "graph_breaks, guards, recompiles, kernels by kind, fallback_nodes) and the detail");
  showCmd->add_option("--compile", show.compile,
                      "Compile id (see `loupe show TRACE`); with --pass");
  showCmd->add_option("--pass", show.pass,
                      "Print the graph after this pass, in .lir; with --compile");

  ExportOptions exp;
  auto* exportCmd =
      app.add_subcommand("export", "Export one snapshot of a trace as Graphviz dot or JSON");
  exportCmd->add_option("trace", exp.trace, "Trace file (.db)")->required();
  exportCmd->add_option("--format", exp.format, "dot or json")->required();
  exportCmd->add_option("--compile", exp.compile, "Compile id (default: the first compile)");
  exportCmd->add_option("--pass", exp.pass, "Pass name (default: the last pass of the compile)");
  exportCmd->add_option("-o,--output", exp.output, "Output file (default: stdout)");

  RunOptions run;
  auto* runCmd =
      app.add_subcommand("run", "Compile a .lir graph and run it on random or given inputs");
  runCmd->add_option("file", run.file, "Graph file (.lir); the first graph in it is run")
      ->required();
  runCmd->add_option(
      "-i,--input", run.inputs,
      "Input as NAME=FILE.npy or FILE.npy (positional order); missing inputs are random");
  runCmd->add_option("-o,--output-dir", run.outputDir, "Write each output as <dir>/output<N>.npy");
  runCmd->add_option("--seed", run.seed, "Seed for random inputs (default 0)");
  runCmd->add_option("--symbol", run.symbols,
                     "Bind a symbolic dim for random inputs: s0=8 (repeatable)");
  runCmd
      ->add_option("--pipeline", run.pipeline,
                   "Passes to run, comma-separated (default: the default pipeline)")
      ->delimiter(',');
  runCmd->add_flag("--no-compile", run.noCompile,
                   "Run the graph as written, with reference kernels");
  runCmd->add_flag("--check", run.check,
                   "Check mode: compare every kernel with the reference; report the error");
  runCmd->add_option("--trace", run.trace,
                     "Record the compile (and check-mode errors) into this trace file");

  // CLI11 reports an unknown subcommand only as "a subcommand is required"; name it instead.
  if (argc > 1 && argv[1][0] != '-') {
    std::string names;
    bool known = false;
    for (const auto* sub : app.get_subcommands({})) {
      known |= sub->get_name() == argv[1];
      names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    if (!known) {
      printError(std::string("unknown command '") + argv[1] + "' (commands: " + names +
                 "; see loupe --help)");
      return 2;
    }
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }

  try {
    if (*showCmd) return runShow(show);
    if (*exportCmd) return runExport(exp);
    if (*runCmd) return runRun(run);
  } catch (const loupe::TraceError& e) {
    printError(e.what());
    return 1;
  } catch (const loupe::Error& e) {
    printError(e.what());
    return e.kind() == "usage" ? 2 : 1;
  } catch (const std::exception& e) {
    printError(std::string("internal error: ") + e.what());
    return 1;
  }
  return 2;
}
