// The layout of torch's advanced indexing, self[i0, i1, ...] with integer index tensors
// (aten.index.Tensor, aten.index_put): one slot per leading dim of self, a null slot taking the
// whole dim. The index tensors broadcast to one block shape B, and B replaces the indexed dims:
// in place when they are adjacent (x[:, i, j] keeps dim 0 in front of B), else in front, since
// no place among self's dims is then B's own (numpy's rule, which torch follows).
//
// The one definition for the reference (compiler/ops/data_movement.cpp), the CPU library kernel
// (compiler/codegen/cpu/library/advanced_indexing.h) and the CUDA scatter
// (compiler/runtime/cuda_fixed_kernels.cpp); both of those layers may include ops.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "compiler/ir/sym_expr.h"

namespace loupe {

class Tensor;

// D: Dim for shape inference, int64_t for a run's tensors.
template <typename D>
struct AdvancedIndexingLayout {
  // `slots`: one per leading dim of self, the index tensor's shape or null for none. Throws a
  // "shape" error naming `op` for more slots than dims, no index at all, or index shapes that do
  // not broadcast.
  AdvancedIndexingLayout(size_t rank, const std::vector<const std::vector<D>*>& slots,
                         std::string_view op);

  std::vector<bool> indexed;  // per dim of self
  std::vector<D> block;       // B, the index shapes broadcast
  std::vector<size_t> before; // self's dims not indexed that come before B, in order
  std::vector<size_t> after;  // and those after it

  // The shape of self[indices]: self's sizes at `before`, B, self's sizes at `after`.
  std::vector<D> indexedShape(const std::vector<D>& self) const {
    std::vector<D> shape;
    for (size_t d : before)
      shape.push_back(self[d]);
    shape.insert(shape.end(), block.begin(), block.end());
    for (size_t d : after)
      shape.push_back(self[d]);
    return shape;
  }
};

extern template struct AdvancedIndexingLayout<Dim>;
extern template struct AdvancedIndexingLayout<int64_t>;

// The slots' shapes for AdvancedIndexingLayout<int64_t>, from index tensors (null for none).
std::vector<const std::vector<int64_t>*> indexSlotShapes(const std::vector<const Tensor*>& slots);

} // namespace loupe
