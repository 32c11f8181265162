// The planned peak memory of the two compiles against the growth of their inputs
// (memory_diff): a peak that grows faster than any input is a size that scales wrongly
// somewhere in the compiled program. A symbolic plan is compared at the first size its compile
// ran at (inspector/trace/concrete_memory.h).
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "inspector/diff/detectors.h"
#include "inspector/trace/concrete_memory.h"

namespace loupe::diff {

namespace {

ConcreteMemory memoryOf(const LoadedCompile& compile) {
  const TraceReader& trace = *compile.ref.trace;
  int64_t id = compile.ref.compileId;
  return concreteMemory(trace.buffers(id), trace.memoryPlan(id), trace.memoryLayouts(id));
}

std::map<std::string, int64_t> inputBuffers(const ConcreteMemory& memory) {
  std::map<std::string, int64_t> sizes;
  for (const BufferRecord& buffer : memory.buffers)
    if (buffer.is_graph_input && buffer.size_bytes > 0) sizes[buffer.name] = buffer.size_bytes;
  return sizes;
}

} // namespace

// A peak that grows more than 25% faster than the fastest-growing input (weights do not grow
// with the batch, so the total of the inputs would hide a blow-up). A peak growing slower is
// no problem and is not reported.
void detectMemoryDiff(const DiffInputs& in, std::vector<Finding>& findings) {
  const LoadedCompile& A = in.a;
  const LoadedCompile& B = in.b;
  ConcreteMemory memoryA = memoryOf(A), memoryB = memoryOf(B);
  const auto &planA = memoryA.plan, &planB = memoryB.plan;
  if (!planA || !planB || planA->peak_bytes <= 0 || planB->peak_bytes <= 0) return;
  std::map<std::string, int64_t> inA = inputBuffers(memoryA), inB = inputBuffers(memoryB);
  double inputRatio = 0;
  std::string fastest;
  for (const auto& [name, size] : inA) {
    auto it = inB.find(name);
    if (it == inB.end() || double(it->second) / double(size) <= inputRatio) continue;
    inputRatio = double(it->second) / double(size);
    fastest = name;
  }
  if (fastest.empty()) return; // unnamed inputs, or a symbolic plan never run
  double peakRatio = double(planB->peak_bytes) / double(planA->peak_bytes);
  if (peakRatio <= inputRatio * 1.25) return;
  char text[240];
  std::snprintf(text, sizeof text,
                "peak memory grows x%.3g (%lld -> %lld bytes) while the fastest-growing input, "
                "%s, grows x%.3g",
                peakRatio, static_cast<long long>(planA->peak_bytes),
                static_cast<long long>(planB->peak_bytes), fastest.c_str(), inputRatio);
  findings.push_back(makeFinding(FindingKind::MemoryDiff, "", {}, std::nullopt, text));
}

} // namespace loupe::diff
