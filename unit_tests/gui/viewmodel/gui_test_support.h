#pragma once

// Small snapshots and traces for the view-model tests.

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gui/viewmodel/graph_model.h"
#include "inspector/trace/trace_records.h"
#include "unit_tests/support/scratch_dir.h"

namespace loupe::view::testing {

using loupe::testing::ScratchDir;

// fc1 (t, mm) → act (relu) → scale (mul by 2) → residual add, with module paths and lines.
extern const char* const kSmallGraph;
// kSmallGraph after a pass that changed the scale to 3, dropped the relu and fused the add
// with a new neg into one group.
extern const char* const kSmallGraphAfter;

std::shared_ptr<const GraphModel> parse(std::string_view lir);

// A snapshot record for lir (the nodes table is not needed by the viewer).
SnapshotRecord snapshotOf(std::string_view lir);

void writeFile(const std::string& path, std::string_view bytes);

} // namespace loupe::view::testing
