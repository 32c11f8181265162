// The in-place gather form (in_place_gather.h).
#include "compiler/ops/in_place_gather.h"

namespace loupe {

std::optional<size_t> inPlaceGatherFirstDim(const Node& node) {
  if (node.op() != "aten._unsafe_index.Tensor" || node.numResults() != 1 || node.numOperands() < 2)
    return std::nullopt;
  const Value* self = node.operand(0);
  if (!self || !self->type().isTensor() || !node.result()->type().isTensor()) return std::nullopt;
  size_t rank = self->tensorType().rank();
  size_t slots = node.numOperands() - 1;
  // Every slot from the first index tensor to the last dim holds one; none before it.
  if (slots != rank) return std::nullopt;
  size_t first = 0;
  while (first < slots && !node.operand(first + 1))
    ++first;
  if (first == slots) return std::nullopt;
  for (size_t d = first; d < slots; ++d) {
    const Value* index = node.operand(d + 1);
    if (!index || !index->type().isTensor()) return std::nullopt;
    DType dtype = index->tensorType().dtype;
    if (dtype != DType::I64 && dtype != DType::I32) return std::nullopt;
    if (index->tensorType().rank() > rank - first) return std::nullopt;
  }
  // The block has as many dims as the slots it replaces: the result has self's rank.
  if (node.result()->tensorType().rank() != rank) return std::nullopt;
  return first;
}

} // namespace loupe
