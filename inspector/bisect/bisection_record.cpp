#include "inspector/bisect/bisection_record.h"

namespace loupe {

BisectionRecord bisectionRecordOf(const BisectResult& result, int injectedFault) {
  BisectionRecord record;
  record.status = !result.diverged ? "no_divergence"
                  : result.culprit ? "culprit_decision"
                                   : "culprit_pass";
  record.rtol = result.tolerance.rtol;
  record.atol = result.tolerance.atol;
  if (injectedFault > 0) record.injected_fault = injectedFault;
  if (!result.firstBadPass.empty()) record.first_bad_pass = result.firstBadPass;
  record.total_decisions = result.totalDecisions;
  if (const auto& d = result.culprit) {
    record.decision_ordinal = d->ordinal;
    record.decision_pass = d->pass;
    record.decision_kind = d->kind;
    record.decision_description = d->description;
    record.decision_nodes = d->nodes;
  }
  for (const CulpritNode& node : result.nodes)
    record.culprit_nodes.push_back({.name = node.name,
                                    .op = node.op,
                                    .file = node.loc.file,
                                    .line = node.loc.line,
                                    .module_path = node.loc.module_path,
                                    .fused_group = node.fusedGroup,
                                    .fused_members = node.fusedMembers});
  auto unlessEmpty = [](const std::string& text) {
    return text.empty() ? std::nullopt : std::optional<std::string>(text);
  };
  for (const BisectTrial& trial : result.trials)
    record.steps.push_back({.phase = trial.phase,
                            .stop_after = unlessEmpty(trial.stopAfter),
                            .decision_limit = trial.decisionLimit >= 0
                                                  ? std::optional<int>(trial.decisionLimit)
                                                  : std::nullopt,
                            .diverged = trial.diverged,
                            .max_abs_error = trial.maxAbsError,
                            .max_rel_error = trial.maxRelError,
                            .error_message = unlessEmpty(trial.error)});
  return record;
}

} // namespace loupe
