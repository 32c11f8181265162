// The `loupe` subcommands. Each returns the process exit code: 0 success, 1 the input was bad
// or the command failed (the message already printed), 2 wrong usage.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace loupe::cli {

struct ShowOptions {
  std::string trace;
  bool json = false;
  std::optional<int64_t> compile; // with pass: print that snapshot
  std::string pass;
  bool decisions = false; // with compile: list its decisions (only the pass's, with pass)
};
int runShow(const ShowOptions& options);

struct ExportOptions {
  std::string trace;
  std::string format;             // dot | json
  std::optional<int64_t> compile; // default: the first compile
  std::string pass;               // default: the last pass of the compile
  std::string output;             // default: stdout
};
int runExport(const ExportOptions& options);

struct RunOptions {
  std::string file;                // .lir
  std::vector<std::string> inputs; // NAME=PATH.npy or PATH.npy (in order)
  std::string outputDir;           // write outputs as .npy here
  uint64_t seed = 0;
  std::vector<std::string> pipeline; // default pipeline when empty and !noCompile
  bool noCompile = false;            // run the graph as written with reference kernels
  bool check = false;                // check mode: every kernel against the reference
  bool profile = false; // run kProfiledCalls more times, timing every kernel (docs/profile.md)
  std::string trace;    // record the compile (and check results) into this trace
  std::vector<std::string> symbols; // s0=8 bindings for random inputs with symbolic dims
  int injectFault = -1;             // testing aid: miscompile after this decision
  bool compare = false;             // also run the graph as written; differing outputs: exit 1
  std::optional<double> rtol;       // for compare; default by the outputs' dtype (docs/bisect.md)
  std::optional<double> atol;
};
// With compare: exit status 1 when the compiled outputs differ from the reference.
int runRun(const RunOptions& options);

struct BisectCliOptions {
  std::string file;                // .lir
  std::vector<std::string> inputs; // as for run
  uint64_t seed = 0;
  std::vector<std::string> symbols;
  std::vector<std::string> pipeline; // default pipeline when empty
  int injectFault = -1;              // testing aid: miscompile after this decision
  std::optional<double> rtol;        // default: by the outputs' dtype (docs/bisect.md)
  std::optional<double> atol;
  std::string trace; // record the compile and the bisection here
  bool json = false;
};
// Exit status 0: no divergence; 1: a culprit was found; 2: usage error or failure.
int runBisect(const BisectCliOptions& options);

struct ReduceCliOptions {
  std::string file;                // .lir, or a trace (.db) with compile
  std::optional<int64_t> compile;  // in a trace: the compile whose graph is reduced
  std::vector<std::string> inputs; // as for run
  uint64_t seed = 0;
  std::vector<std::string> symbols;
  std::vector<std::string> pipeline; // default: the default pipeline (a trace: the compile's)
  int injectFault = -1;              // default in a trace: its last bisection's fault
  std::optional<double> rtol;
  std::optional<double> atol;
  std::string outDir = "reduced"; // reduced.lir, input_K.npy
  double budget = 180;            // seconds
  std::string trace;              // record the reduction here
};
// Exit status 0: no divergence (nothing reduced); 1: reduced; 2: usage error or failure.
int runReduce(const ReduceCliOptions& options);

struct DiffOptions {
  std::vector<std::string> traces; // one trace, or two (A's compiles from the first); with
                                   // ranks: traces and folders of traces, one per rank
  bool ranks = false;              // compare the ranks of a distributed job (rank_diff.h)
  std::string a, b;                // selectors (inspector/diff/compile_selector.h)
  std::string aroundPass;          // compare --a's compile before and after this pass
  bool scaling = false;            // scaling analysis over every compile --a selects
  bool json = false;
  std::optional<size_t> limit; // findings shown; default 10 in text, all in JSON; 0: all
  std::string color = "auto";  // auto | always | never
};
// Exit codes differ from the other commands: 0 the compiles differ only in shapes, 1 they
// differ, 2 an error or wrong usage.
int runDiff(const DiffOptions& options);

struct CacheOptions {
  bool clear = false; // remove the cache's own files
};
int runCache(const CacheOptions& options);

// Prints "loupe: error: <message>" to stderr.
void printError(const std::string& message);

} // namespace loupe::cli
