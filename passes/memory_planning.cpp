// Memory planning: decides where every tensor of the final graph lives and records it in the
// plan: each buffer's size, lifetime (the steps from its definition to its last read) and arena
// offset, with the arena size, the bytes handed to the caller and the peak a call holds. It is
// what "why is this bigger at batch 16" questions start from, and the executable runs exactly
// this layout (compiler/pass/memory_layout.h holds both the analysis and the packing, so the
// plan and the run cannot disagree).
//
// Intermediates share one arena (buffers whose lifetimes do not overlap may share memory), and
// so does the working memory a kernel selection asked for (KernelChoice::scratchBytes: a
// product's padded staging rows on CUDA), as a buffer live for that kernel's step only.
// Graph inputs are listed but never placed: the caller owns them. Graph outputs are allocations
// of their own, handed to the caller, so they stay out of the arena too. View results get no
// buffer: they alias their base, whose lifetime they extend.
//
// The device decides the boundary buffers start at (arenaAlignment): a cache line on the host,
// the caching allocator's 256 bytes on a GPU. On a GPU that is a decision, recorded with the
// device and where the arena's memory comes from; refused (--bisect-limit), the plan keeps the
// host's 64 bytes, which every kernel accepts.
//
// With symbolic shapes offsets cannot be fixed at compile time: offsets are -1, concrete=false,
// and the arena size is the sum of its buffers (no reuse), an upper bound. The executable lays
// the plan out for each binding of the symbols it runs at, and the trace records each of those
// layouts.
#include <memory>

#include "compiler/pass/memory_layout.h"
#include "compiler/pass/target_device.h"
#include "passes/pipeline.h"

namespace loupe {

namespace {

class MemoryPlanningPass : public TablePass<PassId::MemoryPlanningPass> {
public:
  void run(Graph& graph, PassContext& ctx) override {
    // An unknown target or mixed devices: kernel selection has reported it; plan as for the CPU.
    Device device = validTargetDevice(graph, ctx.options().target).value_or(Device{});
    int64_t alignment = arenaAlignment(Device{});
    if (!device.isCpu()) {
      int64_t deviceAlignment = arenaAlignment(device);
      auto describe = [&] {
        return "arena on " + device.str() +
               " (torch's caching allocator on the call's stream; the driver's under loupe "
               "run), buffers at " +
               std::to_string(deviceAlignment) +
               "-byte boundaries as the caching allocator's blocks are, so cuBLASLt sees "
               "intermediates as aligned as eager's tensors";
      };
      if (ctx.decide("memory", describe)) alignment = deviceAlignment;
    }
    ctx.plan().memory = planMemory(graph, alignment, ctx.plan().kernels);
    ctx.instrumentation().onMemoryPlan(ctx.plan().memory);
  }
};

} // namespace

std::unique_ptr<Pass> createMemoryPlanningPass() {
  return std::make_unique<MemoryPlanningPass>();
}

} // namespace loupe
