#include "compiler/ops/advanced_indexing_layout.h"

#include <algorithm>
#include <string>

#include "compiler/ir/error.h"
#include "compiler/ops/broadcast.h"
#include "compiler/tensor/tensor.h"

namespace loupe {
namespace {

[[noreturn]] void layoutError(std::string_view op, const std::string& message) {
  throw Error("shape", std::string(op) + ": " + message);
}

// Shape inference's broadcast, with its rules for symbolic sizes.
Shape broadcastBlock(const std::vector<const Shape*>& shapes, std::string_view op) {
  Shape block;
  for (const Shape* shape : shapes)
    block = broadcastShapes(block, *shape, op);
  return block;
}

std::string sizesStr(const std::vector<int64_t>& sizes) {
  std::string text;
  for (size_t i = 0; i < sizes.size(); ++i)
    text += (i ? "," : "") + std::to_string(sizes[i]);
  return text;
}

// The same broadcast on a run's sizes, with the same message.
std::vector<int64_t> broadcastBlock(const std::vector<const std::vector<int64_t>*>& shapes,
                                    std::string_view op) {
  std::vector<int64_t> block;
  for (const std::vector<int64_t>* shape : shapes) {
    const size_t rank = std::max(block.size(), shape->size());
    std::vector<int64_t> out(rank);
    for (size_t i = 0; i < rank; ++i) {
      const int64_t a = i < rank - block.size() ? 1 : block[i - (rank - block.size())];
      const int64_t b = i < rank - shape->size() ? 1 : (*shape)[i - (rank - shape->size())];
      if (a != b && a != 1 && b != 1)
        layoutError(op, "cannot broadcast shapes [" + sizesStr(block) + "] and [" +
                            sizesStr(*shape) + "] (dim " + std::to_string(i) + ": " +
                            std::to_string(a) + " vs " + std::to_string(b) + ")");
      out[i] = a == 1 ? b : a;
    }
    block = std::move(out);
  }
  return block;
}

} // namespace

template <typename D>
AdvancedIndexingLayout<D>::AdvancedIndexingLayout(size_t rank,
                                                  const std::vector<const std::vector<D>*>& slots,
                                                  std::string_view op)
    : indexed(rank, false) {
  if (slots.size() > rank)
    layoutError(op, std::to_string(slots.size()) + " indices for a tensor of rank " +
                        std::to_string(rank));
  std::vector<const std::vector<D>*> present;
  for (size_t d = 0; d < slots.size(); ++d)
    if (slots[d]) {
      indexed[d] = true;
      present.push_back(slots[d]);
    }
  if (present.empty()) layoutError(op, "needs at least one index tensor");
  block = broadcastBlock(present, op);
  const auto first = std::find(indexed.begin(), indexed.end(), true);
  const auto last = std::find(indexed.rbegin(), indexed.rend(), true).base();
  const bool adjacent = std::find(first, last, false) == last;
  const auto blockAt = static_cast<size_t>(adjacent ? first - indexed.begin() : 0);
  for (size_t d = 0; d < rank; ++d)
    if (!indexed[d]) (d < blockAt ? before : after).push_back(d);
}

template struct AdvancedIndexingLayout<Dim>;
template struct AdvancedIndexingLayout<int64_t>;

std::vector<const std::vector<int64_t>*> indexSlotShapes(const std::vector<const Tensor*>& slots) {
  std::vector<const std::vector<int64_t>*> shapes;
  for (const Tensor* slot : slots)
    shapes.push_back(slot ? &slot->shape() : nullptr);
  return shapes;
}

} // namespace loupe
