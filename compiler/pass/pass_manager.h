// Runs a pipeline of passes over a graph, verifying after each, timing each, and calling the
// instrumentation before and after every pass. What a pass changed (graph, plan, both or
// neither) is told by fingerprints of the graph and the Plan taken before and after it. A pass that
// throws is reported through runAfterPassFailed and the error is rethrown with the pass name added.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compiler/pass/pass.h"

namespace loupe {

struct PassManagerOptions {
  std::vector<std::string> disabled; // pass names skipped
  std::string stopAfter;             // stop after this pass ("" = run all)
  bool verifyEach = true;
};

class PassManager {
public:
  explicit PassManager(PassManagerOptions options = {}) : options_(std::move(options)) {}

  void add(std::unique_ptr<Pass> pass) { passes_.push_back(std::move(pass)); }
  const std::vector<std::unique_ptr<Pass>>& passes() const { return passes_; }

  // Returns true when any pass changed the graph.
  bool run(Graph& graph, PassContext& ctx);

private:
  PassManagerOptions options_;
  std::vector<std::unique_ptr<Pass>> passes_;
};

} // namespace loupe
