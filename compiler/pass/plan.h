// What the back half of the pipeline decides, besides the graph itself: the kernel chosen for
// every compute node or fused group, and the memory plan. The executable is built from a Graph
// plus this Plan; the trace records both.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/sym_expr.h"

namespace loupe {

enum class KernelKind { Generated, Library, Fallback, View };
std::string_view kernelKindName(KernelKind kind); // "generated", "library", "fallback", "view"

struct RejectedAlternative {
  KernelKind kind;
  std::string target;
  std::string why;
};

struct KernelChoice {
  std::string name; // "k3"; also set as the node's `kernel` attribute
  std::string node; // the value name of the node's first result
  std::string op;   // op of the node (loupe.fused for groups)
  KernelKind kind = KernelKind::Generated;
  std::string target;         // "cpu", "cuda"
  std::string implementation; // "generated:pointwise", "openblas:sgemm", "reference:aten.cat", ...
  std::string reason;
  std::vector<RejectedAlternative> rejected;
  std::vector<std::string> fusedOps; // ops inside a fused group, in order
  std::string source;                // generated source text, when there is one
  // Working memory the kernel needs while it runs, beyond its results (a library call's staging
  // buffer): memory planning places it in the arena for the kernel's step, so a call holds no
  // memory the plan does not state. Zero for most kernels.
  SymExpr scratchBytes;
};

// The name of the kernel that kernel selection gave `node` (KernelChoice::name, set as the
// node's `kernel` attribute), or null before kernel selection or for a node it did not plan.
inline const std::string* kernelNameOf(const Node& node) {
  const Attribute* kernel = node.attrs().find("kernel");
  return kernel ? std::get_if<std::string>(kernel) : nullptr;
}

struct BufferAssignment {
  std::string value; // value name
  SymExpr bytes;     // size, symbolic when shapes are
  // In the arena, for intermediates planned with concrete sizes; -1 outside the arena (graph
  // inputs and outputs) and for sizes only known at run time.
  int64_t offset = 0;
  int firstUse = 0; // step index defining it
  int lastUse = 0;  // last step reading it
  bool graphInput = false;
  bool graphOutput = false; // an output shows it: an allocation of its own, handed to the caller
  // A kernel's working memory (KernelChoice::scratchBytes) rather than a value: the kernel's
  // name, the value named "<result>.scratch", live for its step only. Empty for values.
  std::string scratchOf;
};

struct MemoryPlan {
  std::vector<BufferAssignment> buffers;
  SymExpr arenaBytes; // arena size; symbolic when shapes are (then the sum of its buffers)
  // Handed to the caller: the output buffers, and the copies made for outputs that cannot be
  // handed out as they are (a view of an input, a second output on one allocation).
  SymExpr outputBytes;
  SymExpr peakBytes;      // arenaBytes + outputBytes: what one call holds under the plan
  bool concrete = true;   // false when offsets could not be fixed (symbolic shapes)
  int64_t alignment = 64; // every arena offset is a multiple of it (arenaAlignment(device))
};

struct Plan {
  std::vector<KernelChoice> kernels;
  MemoryPlan memory;
  // Launch planning's decision: the torch adapter replays the graph's launches as a CUDA graph
  // (passes/launch_planning.cpp).
  bool cudaGraph = false;
};

} // namespace loupe
