// A bisection as the trace stores it (the bisections and bisection_steps tables).
#pragma once

#include "inspector/bisect/bisector.h"
#include "inspector/trace/trace_records.h"

namespace loupe {

// `injectedFault`: the decision a fault was injected after, or -1.
BisectionRecord bisectionRecordOf(const BisectResult& result, int injectedFault);

} // namespace loupe
