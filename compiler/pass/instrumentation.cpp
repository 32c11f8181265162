#include "compiler/pass/instrumentation.h"

#include <algorithm>

namespace loupe {

void InstrumentationList::runBeforePipeline(const Graph& g) {
  for (auto* i : items_)
    i->runBeforePipeline(g);
}
void InstrumentationList::runBeforePass(const Pass& p, const Graph& g) {
  for (auto* i : items_)
    i->runBeforePass(p, g);
}
void InstrumentationList::runAfterPass(const Pass& p, const Graph& g, const PassRunInfo& info) {
  for (auto* i : items_)
    i->runAfterPass(p, g, info);
}
void InstrumentationList::runAfterPassFailed(const Pass& p, const Graph& g, const std::string& e) {
  for (auto* i : items_)
    i->runAfterPassFailed(p, g, e);
}
void InstrumentationList::runAfterPipeline(const Graph& g, const Plan& plan) {
  for (auto* i : items_)
    i->runAfterPipeline(g, plan);
}
void InstrumentationList::onDecision(const Decision& d) {
  for (auto* i : items_)
    i->onDecision(d);
}
void InstrumentationList::onKernelChoice(const KernelChoice& c) {
  for (auto* i : items_)
    i->onKernelChoice(c);
}
void InstrumentationList::onMemoryPlan(const MemoryPlan& m) {
  for (auto* i : items_)
    i->onMemoryPlan(m);
}
bool InstrumentationList::wantsDecisionText() const {
  return std::any_of(items_.begin(), items_.end(),
                     [](const PassInstrumentation* i) { return i->wantsDecisionText(); });
}

std::string_view kernelKindName(KernelKind kind) {
  switch (kind) {
  case KernelKind::Generated:
    return "generated";
  case KernelKind::Library:
    return "library";
  case KernelKind::Fallback:
    return "fallback";
  case KernelKind::View:
    return "view";
  }
  return "?";
}

} // namespace loupe
