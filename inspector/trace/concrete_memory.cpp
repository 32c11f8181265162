#include "inspector/trace/concrete_memory.h"

namespace loupe {

ConcreteMemory concreteMemory(std::vector<BufferRecord> buffers,
                              std::optional<MemoryPlanRecord> plan,
                              const std::vector<MemoryLayoutRecord>& layouts) {
  ConcreteMemory memory{std::move(buffers), std::move(plan), {}};
  if (!memory.plan || memory.plan->peak_bytes >= 0 || layouts.empty()) return memory;
  const MemoryLayoutRecord& layout = layouts.front();
  memory.bindings = layout.bindings;
  for (BufferRecord& buffer : memory.buffers) {
    auto size = layout.sizes.find(buffer.name);
    if (size != layout.sizes.end() && size->second >= 0) {
      buffer.size_bytes = size->second;
      buffer.size_expr.reset();
    }
    auto offset = layout.offsets.find(buffer.name);
    if (offset != layout.offsets.end()) buffer.offset = offset->second;
  }
  MemoryPlanRecord& p = *memory.plan;
  p.arena_bytes = layout.arena_bytes;
  p.output_bytes = layout.output_bytes;
  p.peak_bytes = layout.peak_bytes;
  p.measured_peak_bytes = layout.measured_peak_bytes;
  p.arena_expr.reset();
  p.output_expr.reset();
  p.peak_expr.reset();
  return memory;
}

std::string bindingsText(const std::map<std::string, int64_t>& bindings) {
  std::string text;
  for (const auto& [symbol, value] : bindings)
    text += (text.empty() ? "" : ", ") + symbol + "=" + std::to_string(value);
  return text;
}

} // namespace loupe
