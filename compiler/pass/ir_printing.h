// Prints the graph after passes, as mlir-opt's -mlir-print-ir-after-* do, each dump headed by
// `// -----// IR after <pass> //----- //` so a reader (or FileCheck) can tell the stages apart.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "compiler/pass/instrumentation.h"

namespace loupe {

struct IRPrintingOptions {
  bool afterAll = false;                // after every pass
  bool afterChange = false;             // only after passes that changed the graph
  std::vector<std::string> afterPasses; // after these passes (none named: all, with afterChange)
};

class IRPrintingInstrumentation : public PassInstrumentation {
public:
  IRPrintingInstrumentation(IRPrintingOptions options, std::ostream& os)
      : options_(std::move(options)), os_(os) {}

  bool enabled() const;
  void runAfterPass(const Pass& pass, const Graph& graph, const PassRunInfo& info) override;
  // The graph a pass left behind when it failed is what explains the failure.
  void runAfterPassFailed(const Pass& pass, const Graph& graph, const std::string& error) override;

private:
  bool selects(const std::string& pass) const;
  IRPrintingOptions options_;
  std::ostream& os_;
};

} // namespace loupe
