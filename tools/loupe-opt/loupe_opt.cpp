// loupe-opt: reads .lir graphs, runs a pipeline of passes over each, and prints the result, as
// mlir-opt does for MLIR. It is how every pass is tested (lit_tests/) and how a user replays
// one compile step by step: print the IR after each pass, disable a pass, stop early, or apply
// only the first N decisions to find the one that broke a model. As a testing aid for that
// search, --inject-fault=N miscompiles the graph right after decision N.
//
// Exit status: 0 on success, 1 for a bad input (parse, verify or pass error: the Error's
// message on stderr), 2 for a bad command line (a one-line message naming the culprit).
#include <algorithm>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "compiler/ir/error.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/ops/op_registry.h"
#include "compiler/ops/verifier.h"
#include "compiler/pass/ir_printing.h"
#include "compiler/pass/pass_manager.h"
#include "compiler/pass/plan_printer.h"
#include "driver/compile_graph.h"
#include "passes/pipeline.h"

namespace loupe {
namespace {

// A command-line mistake: reported in one line, exit status 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

enum class Action { Run, Help, Version, ListPasses, ListOps };

struct Options {
  Action action = Action::Run;
  std::string input = "-";
  std::string output; // empty: stdout
  std::vector<std::string> pipeline;
  PassManagerOptions manager;
  IRPrintingOptions printing;
  int bisectLimit = -1;
  int injectFaultAt = -1;
  bool printDecisions = false;
  bool printPlan = false;
};

// A pass name given to an option must exist; the message lists the valid ones.
std::string checkedPassName(std::string_view name) {
  try {
    checkPassName(name);
  } catch (const Error& e) {
    throw UsageError(e.message());
  }
  return std::string(name);
}

std::vector<std::string> checkedPassNames(std::string_view list) {
  std::vector<std::string> names;
  std::stringstream stream{std::string(list)};
  for (std::string name; std::getline(stream, name, ',');)
    names.push_back(checkedPassName(name));
  return names;
}

int parseCount(std::string_view option, std::string_view value) {
  int n = 0;
  size_t used = 0;
  try {
    n = std::stoi(std::string(value), &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != value.size() || n < 0)
    throw UsageError("--" + std::string(option) + " expects a count >= 0, got '" +
                     std::string(value) + "'");
  return n;
}

struct OptionSpec {
  std::string name;
  std::string valueName; // empty for a flag
  std::string help;
  std::function<void(Options&, std::string_view value)> apply;
};

// Every option, in the order --help shows them; one flag per pass is appended from the
// pass table (passes/passes.def), so a new pass gets its flag without touching this file.
std::vector<OptionSpec> optionTable() {
  std::vector<OptionSpec> table = {
      {"pipeline", "a,b,c", "run these passes in order ('default': the full pipeline)",
       [](Options& o, std::string_view v) {
         try {
           auto names = parsePipeline(v);
           o.pipeline.insert(o.pipeline.end(), names.begin(), names.end());
         } catch (const Error& e) {
           throw UsageError(e.message());
         }
       }},
      {"o", "FILE", "write the result to FILE instead of stdout",
       [](Options& o, std::string_view v) { o.output = v; }},
      {"print-after-all", "", "print the IR to stderr after every pass",
       [](Options& o, std::string_view) { o.printing.afterAll = true; }},
      {"print-after-change", "", "print the IR to stderr only after passes that changed it",
       [](Options& o, std::string_view) { o.printing.afterChange = true; }},
      {"print-after", "NAME", "print the IR to stderr after pass NAME (repeatable, comma list)",
       [](Options& o, std::string_view v) {
         auto names = checkedPassNames(v);
         o.printing.afterPasses.insert(o.printing.afterPasses.end(), names.begin(), names.end());
       }},
      {"disable-pass", "NAME", "skip pass NAME (repeatable, comma list)",
       [](Options& o, std::string_view v) {
         auto names = checkedPassNames(v);
         o.manager.disabled.insert(o.manager.disabled.end(), names.begin(), names.end());
       }},
      {"stop-after", "NAME", "stop the pipeline after pass NAME",
       [](Options& o, std::string_view v) { o.manager.stopAfter = checkedPassName(v); }},
      {"bisect-limit", "N", "apply only decisions 1..N and report the N-th on stderr",
       [](Options& o, std::string_view v) { o.bisectLimit = parseCount("bisect-limit", v); }},
      {"inject-fault", "N",
       "testing aid: after decision N, scale the outputs that depend on it by 1.25",
       [](Options& o, std::string_view v) {
         o.injectFaultAt = parseCount("inject-fault", v);
         if (o.injectFaultAt == 0) throw UsageError("--inject-fault expects a decision >= 1");
       }},
      {"print-decisions", "", "print every decision to stderr, numbered, applied or skipped",
       [](Options& o, std::string_view) { o.printDecisions = true; }},
      {"print-plan", "", "after the pipeline, print the kernel choices and the memory plan",
       [](Options& o, std::string_view) { o.printPlan = true; }},
      {"verify-each", "", "verify the graph after every pass (the default)",
       [](Options& o, std::string_view) { o.manager.verifyEach = true; }},
      {"no-verify-each", "", "do not verify the graph after every pass",
       [](Options& o, std::string_view) { o.manager.verifyEach = false; }},
      {"list-passes", "", "list the passes, in default-pipeline order, and exit",
       [](Options& o, std::string_view) { o.action = Action::ListPasses; }},
      {"list-ops", "", "list the registered ops with their kind and summary, and exit",
       [](Options& o, std::string_view) { o.action = Action::ListOps; }},
      {"help", "", "show this help and exit",
       [](Options& o, std::string_view) { o.action = Action::Help; }},
      {"version", "", "show the version and exit",
       [](Options& o, std::string_view) { o.action = Action::Version; }},
  };
  for (const PassEntry& pass : allPasses())
    table.push_back({std::string(pass.name), "", std::string(pass.summary),
                     [name = std::string(pass.name)](Options& o, std::string_view) {
                       o.pipeline.push_back(name);
                     }});
  return table;
}

Options parseCommandLine(int argc, char** argv, const std::vector<OptionSpec>& table) {
  Options options;
  bool haveInput = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "-" || !arg.starts_with("-")) {
      if (haveInput) throw UsageError("more than one input file: '" + std::string(arg) + "'");
      options.input = arg;
      haveInput = true;
      continue;
    }
    std::string_view body = arg.substr(arg.starts_with("--") ? 2 : 1);
    size_t equals = body.find('=');
    std::string_view name = body.substr(0, equals);
    auto spec = std::find_if(table.begin(), table.end(),
                             [&](const OptionSpec& s) { return s.name == name; });
    if (spec == table.end())
      throw UsageError("unknown option '" + std::string(arg) + "' (see --help)");
    std::string_view value;
    if (spec->valueName.empty()) {
      if (equals != std::string_view::npos)
        throw UsageError("option '--" + spec->name + "' takes no value");
    } else if (equals != std::string_view::npos) {
      value = body.substr(equals + 1);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      throw UsageError("option '--" + spec->name + "' expects " + spec->valueName);
    }
    spec->apply(options, value);
  }
  return options;
}

// Rows of "name  text", the names padded to one column.
void printColumns(const std::vector<std::pair<std::string, std::string>>& rows, std::ostream& os) {
  size_t width = 0;
  for (const auto& row : rows)
    width = std::max(width, row.first.size());
  for (const auto& [name, text] : rows)
    os << "  " << std::left << std::setw(int(width) + 2) << name << text << "\n";
}

void printHelp(const std::vector<OptionSpec>& table, std::ostream& os) {
  os << "usage: loupe-opt [options] [FILE|-]\n\n"
        "Reads .lir graphs from FILE (stdin when FILE is - or absent), verifies them, runs the\n"
        "passes named by --pipeline and the pass flags (in command-line order) and prints the\n"
        "result. With no passes it prints what it read (a round trip).\n";
  std::vector<std::pair<std::string, std::string>> options, passes;
  for (const OptionSpec& spec : table) {
    bool isPass = isPassName(spec.name);
    std::string dashes = spec.name.size() == 1 ? "-" : "--";
    std::string separator = spec.name.size() == 1 ? " " : "=";
    std::string left =
        dashes + spec.name + (spec.valueName.empty() ? "" : separator + spec.valueName);
    (isPass ? passes : options).emplace_back(left, spec.help);
  }
  os << "\nOptions:\n";
  printColumns(options, os);
  os << "\nPasses (each flag appends the pass to the pipeline):\n";
  printColumns(passes, os);
  os << "\nExit status: 0 on success, 1 for an invalid input, 2 for an invalid command line.\n";
}

void listPasses(std::ostream& os) {
  std::vector<std::pair<std::string, std::string>> rows;
  for (const PassEntry& pass : allPasses())
    rows.emplace_back(pass.name, pass.summary);
  printColumns(rows, os);
}

void listOps(std::ostream& os) {
  std::vector<std::pair<std::string, std::string>> rows;
  for (const OpInfo* op : OpRegistry::global().all()) {
    std::ostringstream kindAndSummary;
    kindAndSummary << std::left << std::setw(15) << opKindName(op->kind) << op->summary;
    rows.emplace_back(op->name, kindAndSummary.str());
  }
  printColumns(rows, os);
}

// Numbers decisions across every graph of the input (a bisect limit counts them all) and
// reports them on stderr. Descriptions are built only when `describe` (printed or reported).
class DecisionLog : public PassInstrumentation {
public:
  DecisionLog(bool print, bool describe) : print_(print), describe_(describe) {}
  bool wantsDecisionText() const override { return describe_; }

  // Decisions made in earlier graphs count towards the limit of the next one.
  int made() const { return static_cast<int>(decisions_.size()); }
  void startGraph() { offset_ = made(); }

  void onDecision(const Decision& decision) override {
    // An injected fault is announced as an uncounted decision (ordinal 0); it is always shown.
    if (decision.kind == "fault") {
      std::cerr << "fault: [" << decision.pass << "] " << decision.description << "\n";
      return;
    }
    Decision global = decision;
    global.ordinal += offset_;
    if (print_)
      std::cerr << "decision " << describe(global) << (global.applied ? " (applied)" : " (skipped)")
                << " [" << global.ruleFile << ":" << global.ruleLine << "]\n";
    decisions_.push_back(std::move(global));
  }

  void reportBisect(int limit, std::ostream& os) const {
    os << "bisect-limit: applied " << std::min(limit, made()) << " of " << made() << " decisions";
    if (limit > made())
      os << "; the limit " << limit << " exceeds the " << made() << " decisions made";
    else if (limit > 0)
      os << "; decision " << describe(decisions_[static_cast<size_t>(limit - 1)]);
    os << "\n";
  }

private:
  static std::string describe(const Decision& d) {
    return std::to_string(d.ordinal) + ": [" + d.pass + "] " + d.kind + ": " + d.description;
  }
  bool print_;
  bool describe_;
  int offset_ = 0;
  std::vector<Decision> decisions_;
};

std::string readInput(const std::string& path) {
  std::ostringstream text;
  if (path == "-") {
    text << std::cin.rdbuf();
    return text.str();
  }
  std::ifstream file(path);
  if (!file) throw Error("io", "cannot open input file '" + path + "'");
  text << file.rdbuf();
  return text.str();
}

// Compiles one graph of the input in place, through the driver; returns its plan.
Plan compileInPlace(const Options& options, std::unique_ptr<Graph>& graph, DecisionLog& log,
                    IRPrintingInstrumentation& printer) {
  CompileOptions compile;
  compile.pipeline = options.pipeline;
  compile.manager = options.manager;
  if (options.bisectLimit >= 0)
    compile.pipelineOptions.bisectLimit = std::max(0, options.bisectLimit - log.made());
  // Like the limit, the fault's decision is counted across the graphs of the input.
  if (options.injectFaultAt > log.made())
    compile.pipelineOptions.injectFaultAt = options.injectFaultAt - log.made();
  compile.instrumentation = {&log, &printer};
  log.startGraph();
  CompileResult result = compileGraph(std::move(graph), compile);
  result.throwIfFailed(); // main prints the error: exit status 1
  graph = std::move(result.graph);
  return std::move(result.plan);
}

int run(const Options& options) {
  std::string fileName = options.input == "-" ? "<stdin>" : options.input;
  auto graphs = parseModule(readInput(options.input), fileName);
  for (const auto& graph : graphs)
    verify(*graph);

  std::ofstream file;
  if (!options.output.empty()) {
    file.open(options.output);
    if (!file) throw Error("io", "cannot open output file '" + options.output + "'");
  }
  std::ostream& out = options.output.empty() ? std::cout : file;

  DecisionLog log(options.printDecisions, options.printDecisions || options.bisectLimit >= 0);
  IRPrintingInstrumentation printer(options.printing, std::cerr);
  for (size_t i = 0; i < graphs.size(); ++i) {
    Plan plan;
    if (!options.pipeline.empty()) plan = compileInPlace(options, graphs[i], log, printer);
    out << (i ? "\n" : "") << toText(*graphs[i]);
    if (options.printPlan) printPlan(plan, out);
  }
  if (options.bisectLimit >= 0) log.reportBisect(options.bisectLimit, std::cerr);
  return 0;
}

} // namespace
} // namespace loupe

int main(int argc, char** argv) {
  using namespace loupe;
  try {
    std::vector<OptionSpec> table = optionTable();
    Options options = parseCommandLine(argc, argv, table);
    switch (options.action) {
    case Action::Help:
      printHelp(table, std::cout);
      return 0;
    case Action::Version:
      std::cout << "loupe-opt " << LOUPE_VERSION << "\n";
      return 0;
    case Action::ListPasses:
      listPasses(std::cout);
      return 0;
    case Action::ListOps:
      listOps(std::cout);
      return 0;
    case Action::Run:
      return run(options);
    }
  } catch (const UsageError& e) {
    std::cerr << "loupe-opt: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
