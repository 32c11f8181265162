#include "compiler/pass/ir_printing.h"

#include <algorithm>

#include "compiler/ir/printer.h"
#include "compiler/pass/pass.h"

namespace loupe {

bool IRPrintingInstrumentation::enabled() const {
  return options_.afterAll || options_.afterChange || !options_.afterPasses.empty();
}

bool IRPrintingInstrumentation::selects(const std::string& pass) const {
  const auto& named = options_.afterPasses;
  if (options_.afterAll) return true;
  if (!named.empty()) return std::find(named.begin(), named.end(), pass) != named.end();
  return options_.afterChange;
}

void IRPrintingInstrumentation::runAfterPass(const Pass& pass, const Graph& graph,
                                             const PassRunInfo& info) {
  if (!selects(info.pass) || (options_.afterChange && !info.graphChanged)) return;
  os_ << "// -----// IR after " << pass.name() << " //----- //\n" << toText(graph) << std::flush;
}

void IRPrintingInstrumentation::runAfterPassFailed(const Pass& pass, const Graph& graph,
                                                   const std::string&) {
  if (!enabled()) return;
  os_ << "// -----// IR after " << pass.name() << " failed //----- //\n"
      << toText(graph) << std::flush;
}

} // namespace loupe
