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
  std::string trace;                 // record the compile (and check results) into this trace
  std::vector<std::string> symbols;  // s0=8 bindings for random inputs with symbolic dims
};
int runRun(const RunOptions& options);

// Prints "loupe: error: <message>" to stderr.
void printError(const std::string& message);

} // namespace loupe::cli
