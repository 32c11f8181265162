// The trace's record of this process, filled in one place for every program that writes a trace
// (`loupe run`, `loupe bisect`, the Python backend): its pid and Loupe's version, with what the
// caller knows (its command line, torch's version, its options as JSON).
#pragma once

#include <string>

#include "inspector/trace/trace_records.h"

namespace loupe {

RunInfo thisProcessRun(std::string command, std::string torchVersion = {},
                       std::string optionsJson = "{}");

} // namespace loupe
