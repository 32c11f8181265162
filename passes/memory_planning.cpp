// Memory planning: decides where every intermediate tensor lives. Each top-level node is one
// step; a buffer is live from the step that defines it to the last step that reads it, and
// graph outputs stay live to the last step. Buffers whose lifetimes do not overlap may share
// memory, so all of them are laid out in one arena (layoutArena: best fit by decreasing size,
// 64-byte aligned offsets) and the plan records each buffer's size, offset and lifetime with
// the arena size and the peak of live bytes: what "why is this slower / bigger at batch 16"
// questions start from.
//
// Graph inputs are listed (offset -1) but never placed in the arena: the caller owns them.
// View results get no buffer: they alias their base, whose lifetime they extend.
//
// With symbolic shapes offsets cannot be fixed at compile time (the executable lays the arena
// out once sizes are known): offsets are -1, concrete=false, the arena size is the sum of all
// buffers (no reuse), and the peak is the live total of the step that provably dominates every
// other step (their difference is a polynomial with no negative part, dims being positive);
// when no step does, the peak falls back to the same sum, an upper bound.
#include <algorithm>
#include <memory>
#include <unordered_map>

#include "compiler/ir/dtype.h"
#include "compiler/ops/op_registry.h"
#include "compiler/pass/memory_layout.h"
#include "passes/pipeline.h"

namespace loupe {

namespace {

SymExpr bytesOf(const TensorType& type) {
  return numel(type.shape) * SymExpr(static_cast<int64_t>(dtypeSize(type.dtype)));
}

bool isView(const Node& node) {
  const OpInfo* info = OpRegistry::global().find(node.op());
  return info && info->kind == OpKind::View && node.numOperands() && node.operand(0);
}

// Without a sign test on SymExpr, a canonical spelling with no minus sign is a sum of products
// of non-negative parts, hence non-negative for the positive dims it describes.
bool provablyNonNegative(const SymExpr& e) {
  if (auto c = e.constant()) return *c >= 0;
  return e.str().find('-') == std::string::npos;
}

class LivenessAnalysis {
public:
  explicit LivenessAnalysis(const Graph& graph)
      : lastStep_(static_cast<int>(graph.numNodes()) - 1) {
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
      }
      ++step;
    }
    for (Value* out : graph.outputs())
      if (out && out->type().isTensor()) {
        BufferAssignment& b = buffers_[index_.at(storageOf(out))];
        b.graphOutput = true;
        b.lastUse = std::max(b.lastUse, lastStep_);
      }
  }

  std::vector<BufferAssignment>& buffers() { return buffers_; }

private:
  const Value* storageOf(const Value* v) const {
    auto it = baseOf_.find(v);
    return it == baseOf_.end() ? v : it->second;
  }

  void addBuffer(const Value* v, int step, bool graphInput) {
    BufferAssignment b;
    b.value = v->name();
    b.bytes = bytesOf(v->tensorType());
    b.offset = -1;
    b.firstUse = b.lastUse = step;
    b.graphInput = graphInput;
    index_[v] = buffers_.size();
    buffers_.push_back(std::move(b));
  }

  void readAt(const Value* v, int step) {
    BufferAssignment& b = buffers_[index_.at(storageOf(v))];
    b.lastUse = std::max(b.lastUse, step);
  }

  int lastStep_;
  std::vector<BufferAssignment> buffers_;
  std::unordered_map<const Value*, size_t> index_;        // storage value -> buffer
  std::unordered_map<const Value*, const Value*> baseOf_; // view result -> storage value
};

void layOutConcrete(MemoryPlan& plan, std::vector<BufferAssignment*>& arena) {
  std::vector<BufferInterval> intervals;
  for (const BufferAssignment* b : arena)
    intervals.push_back({*b->bytes.constant(), b->firstUse, b->lastUse});
  ArenaLayout layout = layoutArena(intervals);
  for (size_t i = 0; i < arena.size(); ++i)
    arena[i]->offset = layout.offsets[i];
  plan.arenaBytes = layout.arenaBytes;
  plan.peakBytes = layout.peakBytes;
}

void boundSymbolic(MemoryPlan& plan, const std::vector<BufferAssignment*>& arena, int steps) {
  SymExpr total;
  std::vector<SymExpr> liveAt(static_cast<size_t>(std::max(steps, 1)));
  for (const BufferAssignment* b : arena) {
    total += b->bytes;
    for (int s = b->firstUse; s <= b->lastUse; ++s)
      liveAt[static_cast<size_t>(s)] += b->bytes;
  }
  size_t best = 0;
  for (size_t s = 1; s < liveAt.size(); ++s)
    if (provablyNonNegative(liveAt[s] - liveAt[best])) best = s;
  bool dominates = true;
  for (const SymExpr& live : liveAt)
    dominates = dominates && provablyNonNegative(liveAt[best] - live);
  plan.arenaBytes = total;
  plan.peakBytes = dominates ? liveAt[best] : total;
}

class MemoryPlanningPass : public TablePass<PassId::MemoryPlanningPass> {
public:
  void run(Graph& graph, PassContext& ctx) override {
    LivenessAnalysis liveness(graph);
    MemoryPlan plan;
    plan.buffers = std::move(liveness.buffers());
    std::vector<BufferAssignment*> arena;
    for (auto& b : plan.buffers)
      if (!b.graphInput) arena.push_back(&b);
    plan.concrete = std::all_of(arena.begin(), arena.end(),
                                [](const BufferAssignment* b) { return b->bytes.isConstant(); });
    if (plan.concrete)
      layOutConcrete(plan, arena);
    else
      boundSymbolic(plan, arena, static_cast<int>(graph.numNodes()));
    ctx.plan().memory = plan;
    ctx.instrumentation().onMemoryPlan(ctx.plan().memory);
  }
};

} // namespace

std::unique_ptr<Pass> createMemoryPlanningPass() {
  return std::make_unique<MemoryPlanningPass>();
}

} // namespace loupe
