// The work a node does at the concrete sizes of a run: the bytes it moves and the floating-point
// operations it performs, from the IR alone. Profiling (docs/profile.md) divides them by a
// kernel's measured time to say how much of the device's bandwidth or compute it reached.
//
// The models are deliberately simple and stated, so a reader can redo the arithmetic:
//   bytes  every tensor operand read once and every result written once (numel x element size);
//          a view moves nothing.
//   FLOPs  matmul family 2*M*N*K (bmm and baddbmm times the batch, addmm's bias not counted);
//          convolution 2*N*Cout*Hout*Wout*(Cin/groups)*kh*kw, its backward that much per
//          gradient it computes (the bias gradient one per grad_output element);
//          elementwise ops one per output element; reductions one per input element;
//          fused attention 2*B*H*Lq*Lk*(D + Dv) (half when causal; its backward 2.5 times that),
//          by name, so that cuDNN or flash attention run as aten fallbacks count too;
//          normalization (softmax, layer and batch norm) five per input element; pooling one
//          per input element; a fused group the sum of its body's ops by these rules; data
//          movement, views, factories and ops Loupe does not know none.
#pragma once

#include <cstdint>

#include "compiler/ir/graph.h"
#include "compiler/ir/sym_expr.h"
#include "compiler/ops/op_registry.h"

namespace loupe {

struct OpCost {
  int64_t bytes = 0;
  double flops = 0;
  bool operator==(const OpCost&) const = default;
};

// `node`'s cost with its symbols bound to `bindings` (every symbol of its types must be bound).
OpCost opCost(const Node& node, const SymbolBindings& bindings, const OpRegistry& registry);

} // namespace loupe
