#include "inspector/bisect/bisection_json.h"

#include "inspector/bisect/bisection_record.h"
#include "inspector/trace/trace_json.h"

namespace loupe {

nlohmann::json bisectionJson(const BisectResult& result, int injectedFault) {
  BisectionRecord record = bisectionRecordOf(result, injectedFault);
  nlohmann::json steps = nlohmann::json::array();
  for (const BisectionStepRecord& step : record.steps)
    steps.push_back({{"phase", step.phase},
                     {"stop_after", step.stop_after.value_or("")},
                     {"decision_limit", step.decision_limit.value_or(-1)},
                     {"diverged", step.diverged},
                     {"max_abs_error", step.max_abs_error},
                     {"max_rel_error", step.max_rel_error},
                     {"error", step.error_message.value_or("")}});
  nlohmann::json json = {{"status", record.status},
                         {"diverged", result.diverged},
                         {"report", describeResult(result)},
                         {"rtol", record.rtol},
                         {"atol", record.atol},
                         {"first_bad_pass", record.first_bad_pass.value_or("")},
                         {"total_decisions", record.total_decisions},
                         {"max_abs_error", result.full.maxAbsError},
                         {"max_rel_error", result.full.maxRelError},
                         {"decision", nullptr},
                         {"culprit_nodes", record.culprit_nodes},
                         {"steps", steps}};
  if (record.decision_ordinal)
    json["decision"] = {{"ordinal", *record.decision_ordinal},
                        {"pass", record.decision_pass.value_or("")},
                        {"kind", record.decision_kind.value_or("")},
                        {"description", record.decision_description.value_or("")},
                        {"nodes", record.decision_nodes}};
  if (record.injected_fault) json["injected_fault"] = *record.injected_fault;
  return json;
}

} // namespace loupe
