// Reduction fusion: a reduction and the pointwise work around it become one
// loupe.fused {kind="reduction"} node, so generated code applies the prologue to each element
// as it accumulates, and the epilogue to each result as it is produced, without materialising
// either side.
//
// What is fused, for each reduction op with a generated-code recipe (OpInfo::reduction):
// - prologue: fusable pointwise producers (single elementwise ops or pointwise groups) of the
//   reduction's input, recursively, that have the input's shape and whose results are read
//   only inside the group;
// - epilogue: fusable pointwise consumers of the reduction result, recursively, that have the
//   result's shape. Their values may also be used elsewhere: they become group outputs.
// What is not: a producer whose value is also read outside (it would have to be computed
// twice, or written out from inside a loop over a different shape), consumers of another
// shape (softmax's `x - amax(x)` iterates over the input, not the result), anything already
// claimed by another reduction (a body holds exactly one reduction), and any merge that would
// make a path leave the group and re-enter it. A reduction with nothing to fuse stays alone.
#include <memory>

#include "compiler/ops/op_registry.h"
#include "compiler/pass/fusion_group.h"
#include "passes/pipeline.h"

namespace loupe {

namespace {

bool isFusableReduction(const Node& node) {
  const OpInfo* info = OpRegistry::global().find(node.op());
  return info && info->kind == OpKind::Reduction && info->reduction && node.numResults() == 1 &&
         node.numOperands() >= 1 && node.operand(0) && node.result()->type().isTensor();
}

const Shape& resultShape(const Node& node) {
  return node.result()->tensorType().shape;
}

class ReductionFusion {
public:
  ReductionFusion(FusionPartition& partition, PassContext& ctx)
      : partition_(partition), ctx_(ctx) {}

  void fuseAround(Node& reduction) {
    group_ = partition_.groupOf(&reduction);
    reduction_ = &reduction;
    absorbPrologue(reduction.operand(0));
    std::vector<Node*> frontier = reduction.result()->users();
    while (!frontier.empty()) {
      Node* consumer = frontier.back();
      frontier.pop_back();
      if (!isFusablePointwise(*consumer) || resultShape(*consumer) != resultShape(reduction) ||
          !tryAbsorb(*consumer, "epilogue"))
        continue;
      for (Value* r : consumer->results())
        frontier.insert(frontier.end(), r->users().begin(), r->users().end());
    }
  }

private:
  void absorbPrologue(Value* input) {
    Node* producer = input->definingNode();
    if (!producer || !isFusablePointwise(*producer) ||
        resultShape(*producer) != input->tensorType().shape ||
        !partition_.readOnlyBy(*producer, group_) || !tryAbsorb(*producer, "prologue"))
      return;
    for (Value* operand : producer->operands())
      if (operand && operand->type().isTensor()) absorbPrologue(operand);
  }

  bool tryAbsorb(Node& node, const std::string& role) {
    int theirs = partition_.groupOf(&node);
    // A node already grouped belongs to this reduction or to another one: leave it.
    if (partition_.members(theirs).size() != 1 || !partition_.canMerge(group_, theirs))
      return false;
    auto describe = [&] {
      return "reduction-fusion: fuse " + role + " " + node.describe() + " into " +
             reduction_->describe();
    };
    if (!ctx_.decide("fusion", describe, {node.result()->name(), reduction_->result()->name()}))
      return false;
    partition_.merge(group_, theirs);
    return true;
  }

  FusionPartition& partition_;
  PassContext& ctx_;
  int group_ = 0;
  Node* reduction_ = nullptr;
};

class ReductionFusionPass : public TablePass<PassId::ReductionFusionPass> {
public:
  void run(Graph& graph, PassContext& ctx) override {
    FusionPartition partition(graph);
    ReductionFusion fusion(partition, ctx);
    for (Node* node : graph.nodes())
      if (isFusableReduction(*node)) fusion.fuseAround(*node);
    partition.materialize("reduction");
  }
};

} // namespace

std::unique_ptr<Pass> createReductionFusionPass() {
  return std::make_unique<ReductionFusionPass>();
}

} // namespace loupe
