// Layout: makes memory layouts explicit where an op needs them. A view (permute, expand,
// slice, transpose...) gives its result non-contiguous strides for free; the kernels of some ops
// handle any strides and others assume a dense row-major operand. Where a non-contiguous value
// feeds one of the latter, this pass inserts an aten.clone that packs it, so the copy is visible
// in the graph, in the trace and in the memory plan instead of hidden inside a kernel.
//
// Ops that need contiguous tensor operands, by kind:
// - Matmul, except that a transposed matrix is fine: BLAS takes each operand as row- or
//   column-major with a leading dimension (CblasTrans), so a weight seen through aten.t or a
//   2-D permute is used in place instead of being copied on every call,
// - Convolution (im2col reads rows), Normalization and Pooling (their kernels index rows
//   directly),
// - DataMovement other than aten.clone itself (cat, constant_pad_nd, gather... copy by rows).
// Elementwise and Reduction kernels index every operand through its strides, View ops only
// compute new strides, and opaque ops are handed to the frontend as they are, so none of
// these gets a clone.
//
// The kernels depend on the device (compiler/pass/target_device.h): on CUDA, convolution,
// normalization, pooling and data movement run as their aten kernels, which take any strides,
// and only matmuls (cuBLASLt, which reads a matrix as row- or column-major like BLAS) need
// the rule. Each decision names the device.
#include <memory>
#include <unordered_map>

#include "compiler/ir/error.h"
#include "compiler/ops/graph_builder.h"
#include "compiler/ops/op_registry.h"
#include "compiler/pass/target_device.h"
#include "passes/pipeline.h"
#include "passes/rewrite_support.h"

namespace loupe {

namespace {

bool needsContiguousOperands(const Node& node, const Device& device) {
  const OpInfo* info = OpRegistry::global().find(node.op());
  if (!info) return false;
  if (!device.isCpu()) return info->kind == OpKind::Matmul; // the rest runs as aten's kernel
  switch (info->kind) {
  case OpKind::Matmul:
  case OpKind::Convolution:
  case OpKind::Normalization:
  case OpKind::Pooling:
    return true;
  case OpKind::DataMovement:
    return node.op() != "aten.clone";
  default:
    return false;
  }
}

bool isStridedTensor(const Value* value) {
  return value && value->type().isTensor() && !value->tensorType().isContiguous();
}

// The innermost two dims form a row- or column-major matrix (unit stride on one, a non-zero
// leading dimension on the other): what BLAS addresses directly. Batch dims may have any stride.
bool isBlasMatrix(const TensorType& type) {
  if (type.rank() < 2) return false;
  Shape strides = type.effectiveStrides();
  const SymExpr& rowStride = strides[type.rank() - 2];
  const SymExpr& colStride = strides[type.rank() - 1];
  SymExpr one(1), zero(0);
  return (colStride == one && !(rowStride == zero)) || (rowStride == one && !(colStride == zero));
}

bool acceptsStrided(const Node& node, const Value* operand) {
  const OpInfo* info = OpRegistry::global().find(node.op());
  return info && info->kind == OpKind::Matmul && isBlasMatrix(operand->tensorType());
}

class LayoutPass : public TablePass<PassId::LayoutPass> {
public:
  void run(Graph& graph, PassContext& ctx) override {
    ValueNames names(graph);
    // An unknown target or mixed devices: kernel selection reports it; plan as for the CPU.
    Device device = validTargetDevice(graph, ctx.options().target).value_or(Device{});
    std::unordered_map<Value*, Value*> packed; // one clone per strided value, shared by consumers
    for (Node* node : graph.nodes()) {
      if (!needsContiguousOperands(*node, device)) continue;
      for (size_t i = 0; i < node->numOperands(); ++i) {
        Value* operand = node->operand(i);
        if (!isStridedTensor(operand) || acceptsStrided(*node, operand)) continue;
        auto it = packed.find(operand);
        if (it == packed.end()) {
          auto describe = [&] {
            return "layout: clone %" + operand->name() + " (strides [" +
                   shapeStr(*operand->tensorType().strides) + "]) to contiguous for " +
                   node->describe() + " on " + device.str();
          };
          if (!ctx.decide("layout", describe, {operand->name()})) continue;
          it = packed.emplace(operand, makeContiguous(graph, *node, operand, names)).first;
        }
        node->setOperand(i, it->second);
      }
    }
  }

private:
  static Value* makeContiguous(Graph& graph, Node& before, Value* operand, ValueNames& names) {
    GraphBuilder builder(graph, &before, before.loc());
    Value* copy = builder.op("aten.clone", {operand});
    if (!copy->tensorType().isContiguous())
      throw Error("layout", "aten.clone of %" + operand->name() + " is not contiguous (" +
                                copy->type().str() + ")");
    copy->setName(names.fresh(operand->name() + "_contiguous"));
    return copy;
  }
};

} // namespace

std::unique_ptr<Pass> createLayoutPass() {
  return std::make_unique<LayoutPass>();
}

} // namespace loupe
