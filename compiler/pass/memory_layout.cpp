// Liveness: each top-level node is one step; a buffer is live from the step that defines it to
// the last step that reads it, through views too (a view result gets no buffer: it aliases its
// base, whose lifetime it extends), and graph outputs stay live to the last step. A kernel's
// scratch (KernelChoice::scratchBytes) is an arena buffer live for its own step only.
//
// Arena packing: greedy best-fit by decreasing size. Large buffers are the hardest to place, so
// they go first and smaller ones fill the holes left between them. Each buffer takes the
// smallest aligned gap among the buffers already placed whose lifetimes overlap its own, or
// goes above all of them.
//
// What is handed to the caller mirrors the executable's rules (compiler/runtime/executable.h):
// a computed value an output shows is allocated on its own and handed out as it is, once; a
// second output on the same allocation, and an output that is a view of a graph input, are
// copies. A graph input returned as an output is the caller's own tensor and costs nothing.
#include "compiler/pass/memory_layout.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <unordered_map>

#include "compiler/ir/dtype.h"
#include "compiler/ir/error.h"
#include "compiler/ops/op_registry.h"

namespace loupe {

namespace {

int64_t alignUp(int64_t value, int64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

bool overlapInTime(const BufferInterval& a, const BufferInterval& b) {
  return a.firstUse <= b.lastUse && b.firstUse <= a.lastUse;
}

int64_t peakLiveBytes(const std::vector<BufferInterval>& buffers) {
  std::map<int, int64_t> deltaAtStep;
  for (const auto& b : buffers) {
    deltaAtStep[b.firstUse] += b.bytes;
    deltaAtStep[b.lastUse + 1] -= b.bytes;
  }
  int64_t live = 0, peak = 0;
  for (const auto& [step, delta] : deltaAtStep) {
    live += delta;
    peak = std::max(peak, live);
  }
  return peak;
}

// A view as the executable runs it: an op with a view rule. A view op without one (split, unbind:
// several results) runs its reference, which copies into buffers of its own.
bool isView(const Node& node) {
  const OpInfo* info = OpRegistry::global().find(node.op());
  return info && info->view && node.numOperands() && node.operand(0);
}

// The kernel choices that ask for scratch, by kernel name.
std::map<std::string, const KernelChoice*>
kernelsWithScratch(const std::vector<KernelChoice>& kernels) {
  std::map<std::string, const KernelChoice*> byName;
  for (const KernelChoice& k : kernels)
    if (k.scratchBytes != SymExpr()) byName.emplace(k.name, &k);
  return byName;
}

class LivenessAnalysis {
public:
  LivenessAnalysis(const Graph& graph, const std::vector<KernelChoice>& kernels)
      : lastStep_(static_cast<int>(graph.numNodes()) - 1) {
    std::map<std::string, const KernelChoice*> scratch = kernelsWithScratch(kernels);
    for (const auto& input : graph.inputs())
      if (input->type().isTensor()) addBuffer(input.get(), 0, /*graphInput=*/true);
    int step = 0;
    for (Node* node : graph.nodes()) {
      for (Value* operand : node->operands())
        if (operand && operand->type().isTensor()) readAt(operand, step);
      if (isView(*node)) {
        for (Value* r : node->results())
          baseOf_[r] = storageOf(node->operand(0));
      } else {
        for (Value* r : node->results())
          if (r->type().isTensor()) addBuffer(r, step, /*graphInput=*/false);
        // After the step's results: the executable matches buffers to steps in this order.
        const std::string* name = kernelNameOf(*node);
        if (auto it = name ? scratch.find(*name) : scratch.end(); it != scratch.end())
          addScratch(*node, *it->second, step);
      }
      ++step;
    }
    std::set<const Value*> handedOut;
    for (Value* out : graph.outputs()) {
      if (!out || !out->type().isTensor()) continue;
      const Value* storage = storageOf(out);
      BufferAssignment& b = buffers_[index_.at(storage)];
      b.graphOutput = true;
      b.lastUse = std::max(b.lastUse, lastStep_);
      if (storage == out && b.graphInput) continue; // the caller's own tensor
      if (!b.graphInput && handedOut.insert(storage).second)
        outputBytes_ += b.bytes;
      else
        outputBytes_ += bufferBytes(out->tensorType()); // a copy
    }
  }

  std::vector<BufferAssignment>& buffers() { return buffers_; }
  const SymExpr& outputBytes() const { return outputBytes_; }

private:
  const Value* storageOf(const Value* v) const {
    auto it = baseOf_.find(v);
    return it == baseOf_.end() ? v : it->second;
  }

  void addBuffer(const Value* v, int step, bool graphInput) {
    BufferAssignment b;
    b.value = v->name();
    b.bytes = bufferBytes(v->tensorType());
    b.offset = -1;
    b.firstUse = b.lastUse = step;
    b.graphInput = graphInput;
    index_[v] = buffers_.size();
    buffers_.push_back(std::move(b));
  }

  void addScratch(const Node& node, const KernelChoice& kernel, int step) {
    BufferAssignment b;
    b.value = (node.numResults() ? node.result()->name() : kernel.name) + ".scratch";
    b.bytes = kernel.scratchBytes;
    b.offset = -1;
    b.firstUse = b.lastUse = step;
    b.scratchOf = kernel.name;
    buffers_.push_back(std::move(b));
  }

  void readAt(const Value* v, int step) {
    BufferAssignment& b = buffers_[index_.at(storageOf(v))];
    b.lastUse = std::max(b.lastUse, step);
  }

  int lastStep_;
  std::vector<BufferAssignment> buffers_;
  SymExpr outputBytes_;
  std::unordered_map<const Value*, size_t> index_;        // storage value -> buffer
  std::unordered_map<const Value*, const Value*> baseOf_; // view result -> storage value
};

bool inArena(const BufferAssignment& b) {
  return !b.graphInput && !b.graphOutput;
}

// -1 when a symbol of `e` is unbound (a graph input's size, for a plan whose other buffers are
// concrete).
int64_t evaluateOrUnknown(const SymExpr& e, const SymbolBindings& bindings) {
  for (const auto& symbol : e.symbols())
    if (!bindings.count(symbol)) return -1;
  return e.evaluate(bindings);
}

} // namespace

SymExpr bufferBytes(const TensorType& type) {
  return numel(type.shape) * SymExpr(static_cast<int64_t>(dtypeSize(type.dtype)));
}

ArenaLayout layoutArena(const std::vector<BufferInterval>& buffers, int64_t alignment) {
  if (alignment <= 0) throw Error("memory", "arena alignment must be positive");
  for (const auto& b : buffers)
    if (b.bytes < 0 || b.lastUse < b.firstUse)
      throw Error("memory", "buffer interval with " + std::to_string(b.bytes) +
                                " bytes and steps " + std::to_string(b.firstUse) + ".." +
                                std::to_string(b.lastUse) + " is malformed");

  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (buffers[a].bytes != buffers[b].bytes) return buffers[a].bytes > buffers[b].bytes;
    return buffers[a].firstUse < buffers[b].firstUse;
  });

  ArenaLayout layout;
  layout.offsets.assign(buffers.size(), 0);
  std::vector<size_t> placed;
  for (size_t index : order) {
    const BufferInterval& buffer = buffers[index];
    if (buffer.bytes == 0) continue; // occupies nothing: offset 0 conflicts with no one
    std::vector<std::pair<int64_t, int64_t>> busy; // [begin, end) of time-overlapping buffers
    for (size_t other : placed)
      if (overlapInTime(buffer, buffers[other]))
        busy.emplace_back(layout.offsets[other], layout.offsets[other] + buffers[other].bytes);
    std::sort(busy.begin(), busy.end());

    int64_t cursor = 0;
    int64_t bestOffset = -1, bestGap = 0;
    for (const auto& [begin, end] : busy) {
      int64_t candidate = alignUp(cursor, alignment);
      int64_t gap = begin - candidate;
      if (gap >= buffer.bytes && (bestOffset < 0 || gap < bestGap)) {
        bestOffset = candidate;
        bestGap = gap;
      }
      cursor = std::max(cursor, end);
    }
    layout.offsets[index] = bestOffset >= 0 ? bestOffset : alignUp(cursor, alignment);
    layout.arenaBytes = std::max(layout.arenaBytes, layout.offsets[index] + buffer.bytes);
    placed.push_back(index);
  }
  layout.peakBytes = peakLiveBytes(buffers);
  return layout;
}

MemoryLayout layOutMemory(const MemoryPlan& plan, const SymbolBindings& bindings) {
  MemoryLayout layout;
  std::vector<BufferInterval> intervals;
  std::vector<size_t> arenaBuffers;
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const BufferAssignment& b = plan.buffers[i];
    layout.bytes.push_back(inArena(b) ? b.bytes.evaluate(bindings)
                                      : evaluateOrUnknown(b.bytes, bindings));
    layout.offsets.push_back(-1);
    if (!inArena(b)) continue;
    intervals.push_back({layout.bytes.back(), b.firstUse, b.lastUse});
    arenaBuffers.push_back(i);
  }
  ArenaLayout arena = layoutArena(intervals, plan.alignment);
  for (size_t a = 0; a < arenaBuffers.size(); ++a)
    layout.offsets[arenaBuffers[a]] = arena.offsets[a];
  layout.arenaBytes = arena.arenaBytes;
  layout.outputBytes = plan.outputBytes.evaluate(bindings);
  layout.peakBytes = layout.arenaBytes + layout.outputBytes;
  return layout;
}

MemoryLayout layoutToRun(const MemoryPlan& plan, const SymbolBindings& bindings) {
  if (!plan.concrete) return layOutMemory(plan, bindings);
  MemoryLayout layout;
  for (const BufferAssignment& b : plan.buffers) {
    layout.bytes.push_back(evaluateOrUnknown(b.bytes, bindings));
    layout.offsets.push_back(inArena(b) ? b.offset : -1);
  }
  layout.arenaBytes = *plan.arenaBytes.constant();
  layout.outputBytes = *plan.outputBytes.constant();
  layout.peakBytes = *plan.peakBytes.constant();
  return layout;
}

int64_t arenaAlignment(const Device& device) {
  return device.isCpu() ? 64 : kCachingAllocatorAlignment;
}

MemoryPlan planMemory(const Graph& graph, int64_t alignment,
                      const std::vector<KernelChoice>& kernels) {
  LivenessAnalysis liveness(graph, kernels);
  MemoryPlan plan;
  plan.alignment = alignment;
  plan.buffers = std::move(liveness.buffers());
  plan.outputBytes = liveness.outputBytes();
  plan.concrete = plan.outputBytes.isConstant() &&
                  std::all_of(plan.buffers.begin(), plan.buffers.end(),
                              [](const auto& b) { return !inArena(b) || b.bytes.isConstant(); });
  if (plan.concrete) {
    MemoryLayout layout = layOutMemory(plan, {});
    for (size_t i = 0; i < plan.buffers.size(); ++i)
      plan.buffers[i].offset = layout.offsets[i];
    plan.arenaBytes = SymExpr(layout.arenaBytes);
  } else {
    // No offsets before sizes are known: the arena is bounded by the sum of its buffers.
    for (const BufferAssignment& b : plan.buffers)
      if (inArena(b)) plan.arenaBytes += b.bytes;
  }
  plan.peakBytes = plan.arenaBytes + plan.outputBytes;
  return plan;
}

} // namespace loupe
