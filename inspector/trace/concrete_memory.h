// A compile's memory in bytes, for readers that draw or compare it: a static plan as recorded,
// and a symbolic plan at the first size the compile ran at (its memory_layouts row: sizes,
// offsets, arena and peaks under that binding). So the viewer's memory lanes and the differ's
// memory findings work with real numbers at batch 8 and at batch 16 alike.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "inspector/trace/trace_records.h"

namespace loupe {

struct ConcreteMemory {
  std::vector<BufferRecord> buffers; // in the plan's order
  std::optional<MemoryPlanRecord> plan;
  // The binding the sizes are taken at; empty for a static plan, or a symbolic one never run
  // (then the sizes stay symbolic: -1 bytes with their expressions).
  std::map<std::string, int64_t> bindings;
};

ConcreteMemory concreteMemory(std::vector<BufferRecord> buffers,
                              std::optional<MemoryPlanRecord> plan,
                              const std::vector<MemoryLayoutRecord>& layouts);

// A binding as readers show it: "s0=8, s1=4" (empty for none).
std::string bindingsText(const std::map<std::string, int64_t>& bindings);

} // namespace loupe
