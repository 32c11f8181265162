// Row fusion: reductions over the same rows, and the pointwise work that reads
// their results back along the rows, become one loupe.fused {kind="row"} node. After reduction
// fusion, softmax is four kernels (amax; exp(x - max); sum; the divide) and layer norm four
// (mean; x - mean; variance and rsqrt; the affine), each a round trip through memory of a
// tensor the input's size. A row kernel walks each row once per pass (group_analysis.h: pass k
// folds the reductions that need the results of pass k-1; the second and later walks mostly
// hit the caches) and writes the result once.
//
// Starting from each reduction in graph order (a lone one or a reduction group: the seed), the
// group takes the later nodes that read one of its values and are
// - pointwise (an elementwise op or a pointwise group) of the rows' shape, where the seed keeps
//   its reduced dims (so a result broadcasts back along the row), or of the results' shape;
// - reductions, lone or grouped, over the same rows (input shape, dims and keepdim);
// as long as the group stays convex. Then it takes, recursively, the pointwise producers of its
// full-space values that have the rows' shape and are read only inside the group (a residual
// add before a layer norm, a scale before a softmax): reduction fusion leaves them out when a
// later pass reads them too, and a kernel of their own would write the whole tensor to memory
// for the row kernel to read back. The row kernel computes them in each pass that needs them,
// from inputs that the row cache holds. A seed whose rows are its results (every reduced dim of
// size 1) is left alone. The decisions name the device. Both generators emit row groups; what
// it costs and saves on each is measured in docs/cuda-codegen.md and docs/cpu-codegen.md.
#include <memory>
#include <optional>
#include <variant>

#include "compiler/codegen/group_analysis.h"
#include "compiler/ops/op_registry.h"
#include "compiler/pass/fusion_group.h"
#include "compiler/pass/target_device.h"
#include "passes/pipeline.h"

namespace loupe {

namespace {

// The rows a reduction (or a reduction group) walks.
struct Rows {
  Shape full, kept;
  std::vector<size_t> reducedDims;
  bool keepdim = false;
  friend bool operator==(const Rows&, const Rows&) = default;
};

std::optional<Rows> rowsOf(const Node& node) {
  const Attribute* kind = node.op() == "loupe.fused" ? node.attrs().find("kind") : nullptr;
  const auto* kindText = kind ? std::get_if<std::string>(kind) : nullptr;
  bool reductionGroup = kindText && *kindText == "reduction";
  const OpInfo* info = OpRegistry::global().find(node.op());
  bool loneReduction = info && info->kind == OpKind::Reduction && info->reduction;
  if (!reductionGroup && !loneReduction) return std::nullopt;
  try {
    codegen::GroupAnalysis group = codegen::analyzeGroup(node, OpRegistry::global());
    if (!group.reduction || group.rowGroup) return std::nullopt;
    Rows rows{group.iterationShape, group.reduction->result()->tensorType().shape,
              group.reducedDims, group.keepdim};
    if (rows.full == rows.kept) return std::nullopt;
    return rows;
  } catch (const codegen::Unsupported&) {
    return std::nullopt;
  }
}

class RowFusion {
public:
  RowFusion(FusionPartition& partition, PassContext& ctx, Device device)
      : partition_(partition), ctx_(ctx), device_(device) {}

  // Grows the row group of `seed` over the nodes after it.
  void growFrom(Node& seed, const Rows& rows, const std::vector<Node*>& order, size_t start) {
    int group = partition_.groupOf(&seed);
    for (size_t i = start + 1; i < order.size(); ++i) {
      Node& candidate = *order[i];
      int theirs = partition_.groupOf(&candidate);
      if (theirs == group || partition_.members(theirs).size() != 1 ||
          !readsGroup(candidate, group) || !fits(candidate, rows) ||
          !partition_.canMerge(group, theirs))
        continue;
      auto describe = [&] {
        return "row-fusion: fuse " + candidate.describe() + " into the row group of " +
               seed.describe() + " on " + device_.str() +
               " (one kernel walks each row once per pass)";
      };
      if (!ctx_.decide("fusion", describe, {candidate.result()->name(), seed.result()->name()}))
        continue;
      partition_.merge(group, theirs);
    }
    absorbProducers(seed, rows);
  }

private:
  // Merges the producers described at the top of this file into the row group of `seed`.
  void absorbProducers(Node& seed, const Rows& rows) {
    int group = partition_.groupOf(&seed);
    for (bool grew = true; grew;) {
      grew = false;
      for (Node* member : std::vector<Node*>(partition_.members(group)))
        for (Value* operand : member->operands()) {
          Node* producer = operand ? operand->definingNode() : nullptr;
          if (!producer || partition_.groupOf(producer) == group ||
              partition_.members(partition_.groupOf(producer)).size() != 1 ||
              !isFusablePointwise(*producer) ||
              producer->result()->tensorType().shape != rows.full ||
              !partition_.readOnlyBy(*producer, group) ||
              !partition_.canMerge(group, partition_.groupOf(producer)))
            continue;
          auto describe = [&] {
            return "row-fusion: fuse " + producer->describe() + " into the row group of " +
                   seed.describe() + " on " + device_.str() +
                   " (computed in each pass that reads it: its values never go to memory)";
          };
          if (!ctx_.decide("fusion", describe, {producer->result()->name(), seed.result()->name()}))
            continue;
          partition_.merge(group, partition_.groupOf(producer));
          grew = true;
        }
    }
  }

  bool readsGroup(const Node& node, int group) const {
    for (const Value* operand : node.operands()) {
      const Node* producer = operand ? operand->definingNode() : nullptr;
      if (producer && partition_.groupOf(producer) == group) return true;
    }
    return false;
  }

  static bool fits(const Node& node, const Rows& rows) {
    if (isFusablePointwise(node)) {
      const Shape& shape = node.result()->tensorType().shape;
      return shape == rows.kept || (shape == rows.full && rows.keepdim);
    }
    std::optional<Rows> theirs = rowsOf(node);
    return theirs && *theirs == rows;
  }

  FusionPartition& partition_;
  PassContext& ctx_;
  Device device_;
};

class RowFusionPass : public TablePass<PassId::RowFusionPass> {
public:
  void run(Graph& graph, PassContext& ctx) override {
    std::optional<Device> device = validTargetDevice(graph, ctx.options().target);
    if (!device) return; // an unknown target or mixed devices: kernel selection reports it
    FusionPartition partition(graph);
    RowFusion fusion(partition, ctx, *device);
    std::vector<Node*> order = graph.nodes();
    for (size_t i = 0; i < order.size(); ++i) {
      if (partition.members(partition.groupOf(order[i])).size() != 1) continue;
      if (std::optional<Rows> rows = rowsOf(*order[i])) fusion.growFrom(*order[i], *rows, order, i);
    }
    partition.materialize("row");
  }
};

} // namespace

std::unique_ptr<Pass> createRowFusionPass() {
  return std::make_unique<RowFusionPass>();
}

} // namespace loupe
