// Where a graph's tensors live, decided in one place for the memory-planning pass and the
// executable alike, so that the plan a trace records is the layout that runs:
//
// - planMemory: the buffers of a graph, their lifetimes, and for concrete sizes their offsets
//   in one arena (the memory-planning pass records it; an executable given no plan makes it).
// - layOutMemory: a plan's layout for concrete sizes. planMemory uses it for static shapes; the
//   executable uses it for each binding of a symbolic plan's symbols, once sizes are known.
// - layoutArena: the arena packing both use.
//
// Graph inputs are the caller's memory and graph outputs are handed to the caller as
// allocations of their own, so neither goes into the arena; only intermediates share it.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/sym_expr.h"
#include "compiler/pass/plan.h"

namespace loupe {

struct BufferInterval {
  int64_t bytes = 0;
  int firstUse = 0; // step that defines the buffer
  int lastUse = 0;  // last step that reads it (inclusive)
};

struct ArenaLayout {
  std::vector<int64_t> offsets; // aligned to `alignment`, one per interval
  int64_t arenaBytes = 0;       // total size of the arena
  int64_t peakBytes = 0;        // max over steps of the bytes of buffers live at that step
};

// Lays out buffers with known sizes and lifetimes in one arena so that no two buffers that are
// live at the same time overlap.
ArenaLayout layoutArena(const std::vector<BufferInterval>& buffers, int64_t alignment = 64);

// The alignment of every block of torch's caching allocator on a GPU.
inline constexpr int64_t kCachingAllocatorAlignment = 256;

// The boundary arena buffers start at on `device`. On the host, a cache line (64 bytes: no
// buffer shares a line with another, and AVX-512 loads of a buffer's start are aligned). On a
// GPU, kCachingAllocatorAlignment, as torch's own tensors are: cuBLASLt is told
// each operand's alignment and chooses among fewer algorithms for a less aligned one, so a
// matmul reading an intermediate of the arena gets the choices it would get in eager.
int64_t arenaAlignment(const Device& device);

// The bytes of a buffer holding a tensor of `type`, as the plan states them (the executable
// matches its buffers to the plan's by them).
SymExpr bufferBytes(const TensorType& type);

// The buffers of a graph (inputs first, then each non-view result in step order, each followed
// by the scratch its kernel asks for in `kernels`, KernelChoice::scratchBytes) with their
// lifetimes; with concrete sizes also their offsets (layOutMemory), else offsets of -1. Offsets
// are multiples of `alignment`. A scratch buffer is live for its kernel's step only.
MemoryPlan planMemory(const Graph& graph, int64_t alignment = 64,
                      const std::vector<KernelChoice>& kernels = {});

// A memory plan laid out for concrete sizes (at the plan's alignment).
struct MemoryLayout {
  std::vector<int64_t> bytes;   // per buffer of the plan, in its order
  std::vector<int64_t> offsets; // per buffer: its arena offset, -1 outside the arena
  int64_t arenaBytes = 0;
  int64_t outputBytes = 0; // handed to the caller (MemoryPlan::outputBytes)
  int64_t peakBytes = 0;   // arenaBytes + outputBytes: what a call holds under the plan
};

// Lays the plan out with its symbols bound (sizes are evaluated with `bindings`; a concrete
// plan needs none).
MemoryLayout layOutMemory(const MemoryPlan& plan, const SymbolBindings& bindings);

// The layout a call runs with: a concrete plan's own offsets, or a symbolic plan laid out for
// the binding.
MemoryLayout layoutToRun(const MemoryPlan& plan, const SymbolBindings& bindings);

} // namespace loupe
