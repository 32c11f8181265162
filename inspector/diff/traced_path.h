// Where two compiles' paths through the program part. Each compile records the source lines
// Dynamo traced, in order (`traced_lines`, docs/trace-schema.md); two compiles of one frame
// that took different branches trace the same lines up to the condition that chose, then go
// on differently. The differ's `diverged_branch` finding names that condition and where each
// compile went on (docs/differ.md).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "inspector/trace/trace_records.h"

namespace loupe::diff {

struct PathParting {
  TracedLine condition;                   // the last line both traced before they part
  std::optional<TracedLine> nextA, nextB; // the line each traced next; none: its trace ended
};

// The first place the sequences differ, after at least one common line; none when they are
// equal, when either is empty (a compile recorded without its lines) or when they differ from
// the first line on (not one frame's code). A line is its file, line and inline depth: one
// line traced at two depths (a recursive helper) is two places.
std::optional<PathParting> partingOf(const std::vector<TracedLine>& a,
                                     const std::vector<TracedLine>& b);

// A traced line as a message names it: "line 12" in `relativeTo`'s file and function, else
// "file:12 in fn"; followed by its code in backticks when the file can be read here.
std::string describeLine(const TracedLine& line, const TracedLine& relativeTo);

} // namespace loupe::diff
