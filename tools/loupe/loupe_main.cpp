// `loupe`: the command-line front end to traces and graphs. Subcommands live in cmd_*.cpp;
// this file only declares the options and maps errors to exit codes (0 ok, 1 failed, 2 usage).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <string>

#include "compiler/ir/error.h"
#include "inspector/diff/finding_kinds.h"
#include "inspector/trace/trace_error.h"
#include "tools/loupe/commands.h"

namespace loupe::cli {
void printError(const std::string& message) {
  std::cerr << "loupe: error: " << message << "\n";
}

namespace {
// `loupe diff --help` lists the finding kinds from the differ's table, so the help cannot
// drift from what the differ reports and how it ranks it.
std::string findingKindsHelp() {
  std::string text = "Findings (the JSON kind), highest base score first, with severity:\n";
  for (const loupe::diff::FindingKindInfo& k : loupe::diff::kFindingKinds) {
    std::string name(k.name), severity(loupe::diff::severityName(k.severity));
    name.resize(std::max<size_t>(name.size() + 2, 22), ' ');
    severity.resize(9, ' ');
    text += "  " + name + std::to_string(static_cast<int>(k.base)) + "  " + severity +
            std::string(k.doc) + "\n";
  }
  return text;
}
} // namespace
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
      "show", "Summarise a trace: runs, compiles, passes and counts; or print one snapshot, or "
              "list a compile's decisions");
  showCmd->add_option("trace", show.trace, "Trace file (.db)")->required();
  showCmd->add_flag(
      "--json", show.json,
      "One JSON document: counts as top-level keys (compiles, passes, snapshots, nodes, "
      "graph_breaks, guards, recompiles, kernels by kind, fallback_nodes) and the detail");
  showCmd->add_option("--compile", show.compile,
                      "Compile id (see `loupe show TRACE`); with --pass or --decisions");
  showCmd->add_option("--pass", show.pass,
                      "Print the graph after this pass, in .lir; with --compile (with "
                      "--decisions: list only this pass's decisions)");
  showCmd->add_flag("--decisions", show.decisions,
                    "List the compile's decisions, numbered, applied or skipped, each with the "
                    "rule that made it (file:line); with --compile");

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
  runCmd->add_flag("--profile", run.profile,
                   "Profile: run the graph 5 more times, timing every kernel; print each one's "
                   "time, bytes, FLOPs and share of the device's peak (docs/profile.md)");
  runCmd->add_option("--trace", run.trace,
                     "Record the compile (and check-mode errors, the profile) into this trace "
                     "file");
  runCmd
      ->add_option("--inject-fault", run.injectFault,
                   "Testing aid: miscompile the graph after decision N (see docs/bisect.md)")
      ->check(CLI::PositiveNumber);
  runCmd->add_flag("--compare", run.compare,
                   "Also run the graph as written (reference implementations) and compare the "
                   "outputs; exit 1 when they differ beyond tolerance");
  runCmd->add_option("--rtol", run.rtol, "With --compare: relative tolerance (default by dtype)");
  runCmd->add_option("--atol", run.atol, "With --compare: absolute tolerance (default by dtype)");

  BisectCliOptions bisect;
  auto* bisectCmd = app.add_subcommand(
      "bisect", "Find the pass and the decision that make a .lir graph's compiled results "
                "differ from the reference (exit 0: none, 1: culprit found, 2: error)");
  bisectCmd->add_option("file", bisect.file, "Graph file (.lir); the first graph in it")
      ->required();
  bisectCmd->add_option("-i,--input", bisect.inputs,
                        "Input as NAME=FILE.npy or FILE.npy; missing inputs are random");
  bisectCmd->add_option("--seed", bisect.seed, "Seed for random inputs (default 0)");
  bisectCmd->add_option("--symbol", bisect.symbols, "Bind a symbolic dim: s0=8 (repeatable)");
  bisectCmd
      ->add_option("--pipeline", bisect.pipeline,
                   "Passes, comma-separated (default: the default pipeline)")
      ->delimiter(',');
  bisectCmd
      ->add_option("--inject-fault", bisect.injectFault,
                   "Testing aid: miscompile the graph after decision N (see docs/bisect.md)")
      ->check(CLI::PositiveNumber);
  bisectCmd->add_option("--rtol", bisect.rtol, "Relative tolerance (default by dtype)");
  bisectCmd->add_option("--atol", bisect.atol, "Absolute tolerance (default by dtype)");
  bisectCmd->add_option("--trace", bisect.trace, "Record the compile and the bisection here");
  bisectCmd->add_flag("--json", bisect.json, "Print the result as one JSON document");

  ReduceCliOptions reduce;
  auto* reduceCmd = app.add_subcommand(
      "reduce", "Shrink a graph whose compiled results differ from the reference to a small graph "
                "that still differs; write it with its inputs and print the `loupe run` command "
                "that reproduces it (exit 0: no divergence, 1: reduced, 2: error)");
  reduceCmd
      ->add_option("file", reduce.file,
                   "Graph file (.lir; the first graph in it), or a trace (.db) with --compile")
      ->required();
  reduceCmd->add_option("--compile", reduce.compile,
                        "In a trace: the compile whose graph is reduced (its pipeline, and the "
                        "fault of its last bisection, unless given)");
  reduceCmd->add_option("-i,--input", reduce.inputs,
                        "Input as NAME=FILE.npy or FILE.npy; missing inputs are random");
  reduceCmd->add_option("--seed", reduce.seed, "Seed for random inputs (default 0)");
  reduceCmd->add_option("--symbol", reduce.symbols, "Bind a symbolic dim: s0=8 (repeatable)");
  reduceCmd
      ->add_option("--pipeline", reduce.pipeline,
                   "Passes, comma-separated (default: the default pipeline)")
      ->delimiter(',');
  reduceCmd
      ->add_option("--inject-fault", reduce.injectFault,
                   "Testing aid: miscompile the graph after decision N (see docs/bisect.md)")
      ->check(CLI::PositiveNumber);
  reduceCmd->add_option("--rtol", reduce.rtol, "Relative tolerance (default by dtype)");
  reduceCmd->add_option("--atol", reduce.atol, "Absolute tolerance (default by dtype)");
  reduceCmd->add_option("--out", reduce.outDir,
                        "Write reduced.lir and input_K.npy here (default: reduced)");
  reduceCmd
      ->add_option("--budget", reduce.budget,
                   "Seconds to search; then the smallest diverging graph found is written "
                   "(default 180)")
      ->check(CLI::PositiveNumber);
  reduceCmd->add_option("--trace", reduce.trace, "Record the reduction in this trace");

  DiffOptions diff;
  auto* diffCmd = app.add_subcommand(
      "diff",
      "Compare two compiles of one frame (e.g. batch 8 vs 16) and rank what differs beyond "
      "shapes, most likely culprit first (docs/differ.md).\n"
      "  loupe diff TRACE                      each recompile vs the previous compile of its "
      "frame\n"
      "  loupe diff TRACE --a SEL --b SEL      two compiles of one trace\n"
      "  loupe diff TRACE_A TRACE_B            two traces (optionally --a/--b in each)\n"
      "  loupe diff TRACE --a SEL --around-pass PASS   one compile before and after a pass\n"
      "  loupe diff TRACE --a SEL --scaling    how dims scale over 3+ compiles\n"
      "  loupe diff --ranks TRACE... | FOLDER  the ranks of a distributed job, one trace each\n"
      "Selectors (joined with ',', all must hold): 7 (compile id), 0/1 or 0/1:bw (compile "
      "key), fw|bw|inference|graph, frame=NAME, x=8 (dim 0 of input x), x.1=64, batch=8.\n" +
          findingKindsHelp() +
          "Exit status: 0 only shapes differ (notes at most), 1 the compiles differ (a warning or "
          "an error), 2 error or usage.");
  diffCmd
      ->add_option("traces", diff.traces,
                   "Trace file(s) (.db): one, or A and B; with --ranks (implied by a folder, by "
                   "more than two traces, or by two traces of different ranks): a trace per rank")
      ->required()
      ->expected(1, -1);
  diffCmd->add_flag("--ranks", diff.ranks,
                    "Compare the ranks' compiles: what one rank compiled, recompiled or traced "
                    "differently from the others");
  diffCmd->add_option("--a", diff.a, "Selector for compile(s) A (in the first trace)");
  diffCmd->add_option("--b", diff.b, "Selector for compile(s) B (in the second trace, if any)");
  diffCmd->add_option("--around-pass", diff.aroundPass,
                      "Compare the compile --a selects before and after this pass");
  diffCmd->add_flag("--scaling", diff.scaling,
                    "Scaling analysis: fit every dim over the compiles --a selects (3+ "
                    "compiles do this by default) and report non-linear ones");
  diffCmd->add_flag("--json", diff.json,
                    "One JSON document: {a, b, same, findings: [{kind, score, pass, nodes, "
                    "source, message}]}; {same, diffs: [...]} for several pairs");
  diffCmd->add_option("--limit", diff.limit,
                      "Findings shown per comparison (default 10 in text, all in JSON; 0: all)");
  diffCmd
      ->add_option("--color", diff.color, "auto (a terminal and NO_COLOR unset), always or never")
      ->default_str("auto");

  CacheOptions cache;
  auto* cacheCmd = app.add_subcommand(
      "cache", "Show the kernel cache: where it is ($LOUPE_CACHE_DIR/kernels, default "
               "~/.cache/loupe/kernels), its size and limit ($LOUPE_CACHE_MAX_MB), how many "
               "libraries and kernels it holds, and whether Loupe refuses it as not private");
  cacheCmd->add_flag("--clear", cache.clear,
                     "Empty it: remove the libraries, sources and index files it holds (only "
                     "files it recognises as its own)");

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
    if (*diffCmd) return runDiff(diff);
    if (*bisectCmd) return runBisect(bisect);
    if (*reduceCmd) return runReduce(reduce);
    if (*cacheCmd) return runCache(cache);
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
