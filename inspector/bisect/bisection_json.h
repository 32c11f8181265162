// A bisection as JSON, the one serialisation of a bisection's outcome: `loupe bisect --json`
// prints it and `loupe._C.bisect` hands it to Python as a dict, so the CLI and the backend speak
// of the same fields. Beside the trace's record (bisection_record.h) it carries what a reader
// of the result wants at once: whether it diverged, the printed report, the full pipeline's
// errors.
#pragma once

#include <nlohmann/json.hpp>

#include "inspector/bisect/bisector.h"

namespace loupe {

// {status, diverged, report, rtol, atol, injected_fault (when one was), first_bad_pass ("" when
// none), total_decisions, max_abs_error, max_rel_error, decision ({ordinal, pass, kind,
// description, nodes}, or null), culprit_nodes, steps}. `injectedFault`: the decision a fault
// was injected after, or -1.
nlohmann::json bisectionJson(const BisectResult& result, int injectedFault);

} // namespace loupe
