// Renders what the differ found: terse text for a terminal (coloured on request) and JSON.
// The JSON of one comparison is
//   {"a": {"trace", "compile", "compile_key", "graph_kind", "label"}, "b": {...}, "same": bool,
//    "findings": [{"kind", "severity", "score", "pass", "nodes": [{"op", "a", "b", "shape_a",
//    "shape_b"}],
//                  "source": {"file", "line", "module"} | null, "message"}]}
// and several comparisons are {"same": bool, "diffs": [<one comparison>, ...]}. A comparison of
// ranks (rank_diff.h) is
//   {"ranks": [{"rank", "world_size", "backend", "trace", "run"}], "same": bool,
//    "findings": [{<a finding as above>, "ranks": [int], "frame", "compile_id", "graph_kind"}]}
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "inspector/diff/compile_diff.h"
#include "inspector/diff/rank_diff.h"

namespace loupe::diff {

struct TextReportOptions {
  size_t limit = 10;  // findings shown; 0 shows all
  bool color = false; // ANSI colours (the caller decides: a tty and NO_COLOR unset)
};

void printTextReport(const DiffReport& report, std::ostream& os, const TextReportOptions& options);

// One comparison as a JSON document (limit 0: all findings).
std::string jsonReport(const DiffReport& report, size_t limit = 0);
// Several comparisons as {"same", "diffs"}.
std::string jsonReports(const std::vector<DiffReport>& reports, size_t limit = 0);

void printRankReport(const RankReport& report, std::ostream& os, const TextReportOptions& options);
std::string jsonRankReport(const RankReport& report, size_t limit = 0);

} // namespace loupe::diff
