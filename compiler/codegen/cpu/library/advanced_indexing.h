// Advanced indexing, self[i0, i1, ...] with integer index tensors (aten.index.Tensor) and its
// writing form (aten.index_put), laid out as compiler/ops/advanced_indexing_layout.h says: the
// index tensors broadcast to one block shape B, which replaces the indexed dims (in place when
// they are adjacent, in front otherwise); a `none` slot takes the whole dim.
//
// Element (i, b, j) of the result, i over the dims of self before the block, b over B, j over
// those after it, is element pre[i] + block[b] + post[j] of self: three offset tables, the
// block's from the index tensors (negative indices counted from the end, each checked against its
// dim), the others from self's strides. So a call reads each index once and then moves elements:
// whole runs with memcpy where the dims after the block are self's innermost (x[idx] over rows),
// else one element at a time (nearest-neighbour upsampling, whose indexed dims are the
// innermost). The runs of `pre` are split across the library threads; index_put's writes from
// different `pre` never meet (they differ in a dim no index touches), so it splits them too.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "compiler/codegen/cpu/library/parallel_ranges.h"
#include "compiler/ir/dtype.h"
#include "compiler/ir/error.h"
#include "compiler/ops/advanced_indexing_layout.h"
#include "compiler/tensor/tensor.h"

namespace loupe::library {

class IndexedOffsets {
public:
  // `indices`: one slot per leading dim of self, null for none.
  IndexedOffsets(const Tensor& self, const std::vector<const Tensor*>& indices,
                 const std::string& op) {
    const AdvancedIndexingLayout<int64_t> layout(self.rank(), indexSlotShapes(indices), op);
    const std::vector<int64_t>& block = layout.block;
    const std::vector<int64_t>& strides = self.strides();
    pre_ = offsetsOver(self, layout.before);
    post_ = offsetsOver(self, layout.after);
    shape_ = layout.indexedShape(self.shape());
    // The post dims are self's innermost, densely: a run of post_.size() elements.
    postIsRun_ = true;
    for (size_t j = 0; j < post_.size(); ++j)
      postIsRun_ = postIsRun_ && post_[j] == static_cast<int64_t>(j);
    int64_t blockCount = 1;
    for (int64_t size : block)
      blockCount *= size;
    block_offsets_.assign(static_cast<size_t>(blockCount), 0);
    for (size_t d = 0; d < self.rank(); ++d) {
      if (!layout.indexed[d]) continue;
      const Tensor& index = *indices[d];
      // The index read as broadcast to the block: stride 0 along its broadcast dims.
      std::vector<int64_t> broadcastStrides(block.size(), 0);
      size_t lead = block.size() - index.rank();
      for (size_t k = 0; k < index.rank(); ++k)
        if (index.size(k) != 1) broadcastStrides[lead + k] = index.strides()[k];
      Tensor spread = index.view(block, broadcastStrides, index.offset()).contiguous();
      for (int64_t b = 0; b < blockCount; ++b) {
        auto at = static_cast<int64_t>(spread.at(b));
        int64_t size = self.size(d);
        if (at < -size || at >= size)
          throw Error("runtime", op + ": index " + std::to_string(at) +
                                     " is out of bounds for dim " + std::to_string(d) +
                                     " of size " + std::to_string(size));
        block_offsets_[static_cast<size_t>(b)] += (at < 0 ? at + size : at) * strides[d];
      }
    }
  }

  // The result's shape: the dims before the block, the block, the dims after it.
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t preCount() const { return static_cast<int64_t>(pre_.size()); }
  int64_t blockCount() const { return static_cast<int64_t>(block_offsets_.size()); }
  int64_t postCount() const { return static_cast<int64_t>(post_.size()); }

  // visit(resultIndex, selfOffset, run) over the result's elements for pre in [first, last),
  // `run` elements at a time (the post dims' run, else 1).
  template <typename Visit>
  void forEachRun(int64_t first, int64_t last, Visit visit) const {
    int64_t blocks = blockCount(), posts = postCount();
    for (int64_t i = first; i < last; ++i)
      for (int64_t b = 0; b < blocks; ++b) {
        int64_t base = pre_[static_cast<size_t>(i)] + block_offsets_[static_cast<size_t>(b)];
        int64_t result = (i * blocks + b) * posts;
        if (postIsRun_) {
          visit(result, base, posts);
          continue;
        }
        for (int64_t j = 0; j < posts; ++j)
          visit(result + j, base + post_[static_cast<size_t>(j)], 1);
      }
  }

  // Whether each element of the block is one element of self (no dims after the block):
  // upsampling's gathers and scatters, which index the two innermost dims.
  bool postIsOneElement() const { return post_.size() == 1; }
  // Element (i, b) of the result is element preOffset(i) + blockOffsets()[b] of self (when
  // postIsOneElement).
  int64_t preOffset(int64_t i) const { return pre_[static_cast<size_t>(i)]; }
  const std::vector<int64_t>& blockOffsets() const { return block_offsets_; }

private:
  // Every element's offset in self over `dims` (row-major over them).
  static std::vector<int64_t> offsetsOver(const Tensor& self, const std::vector<size_t>& dims) {
    std::vector<int64_t> offsets = {0};
    for (size_t d : dims) {
      std::vector<int64_t> next;
      next.reserve(offsets.size() * static_cast<size_t>(self.size(d)));
      for (int64_t base : offsets)
        for (int64_t k = 0; k < self.size(d); ++k)
          next.push_back(base + k * self.strides()[d]);
      offsets = std::move(next);
    }
    return offsets;
  }

  std::vector<int64_t> shape_, pre_, post_, block_offsets_;
  bool postIsRun_ = true;
};

// body(Word{}) with the unsigned integer type of `bytes` bytes: a copy of an element of any
// dtype is a load and a store of that word.
template <typename Body>
void withWordOfSize(size_t bytes, Body body) {
  switch (bytes) {
  case 1:
    return body(uint8_t{});
  case 2:
    return body(uint16_t{});
  case 4:
    return body(uint32_t{});
  default:
    return body(uint64_t{});
  }
}

template <typename Word>
void gatherWords(const IndexedOffsets& offsets, const Word* source, Word* out, int64_t first,
                 int64_t last) {
  offsets.forEachRun(first, last, [&](int64_t result, int64_t from, int64_t run) {
    if (run == 1)
      out[result] = source[from];
    else if (run > 1)
      std::memcpy(out + result, source + from, static_cast<size_t>(run) * sizeof(Word));
  });
}

// aten.index.Tensor in any dtype: inputs self, then the index slots (null for none).
inline void indexGather(const std::vector<const Tensor*>& inputs, Tensor& out) {
  Tensor self = inputs[0]->contiguous();
  IndexedOffsets offsets(self, {inputs.begin() + 1, inputs.end()}, "aten.index.Tensor");
  int64_t pre = offsets.preCount();
  int parts = parallelParts(pre, out.numel() / std::max<int64_t>(pre, 1));
  withWordOfSize(dtypeSize(self.dtype()), [&](auto word) {
    using Word = decltype(word);
    const Word* source = self.dataAs<Word>();
    Word* to = out.dataAs<Word>();
    if (offsets.postIsOneElement()) {
      // One element per block position (nearest upsampling's gather): a plain loop over the
      // block per pre index, instead of a visitor call and a run test per element.
      const int64_t* blockOffsets = offsets.blockOffsets().data();
      int64_t blocks = offsets.blockCount();
      parallelRanges(parts, pre, [&](int, int64_t first, int64_t last) {
        for (int64_t i = first; i < last; ++i) {
          const Word* from = source + offsets.preOffset(i);
          Word* target = to + i * blocks;
          for (int64_t b = 0; b < blocks; ++b)
            target[b] = from[blockOffsets[b]];
        }
      });
      return;
    }
    parallelRanges(parts, pre, [&](int, int64_t first, int64_t last) {
      gatherWords(offsets, source, to, first, last);
    });
  });
}

// aten.index_put: inputs self, the index slots, values (broadcast to the indexed shape). With
// `accumulate` the values are added (in T, in the reference's order within each `pre`), else
// written, the last of repeated indices winning as in the reference.
template <typename T>
void indexPutAs(const std::vector<const Tensor*>& inputs, bool accumulate, Tensor& out) {
  Tensor self = inputs.front()->contiguous();
  IndexedOffsets offsets(self, {inputs.begin() + 1, inputs.end() - 1}, "aten.index_put");
  if (out.nbytes() > 0) std::memcpy(out.data(), self.data(), out.nbytes());
  // The values as a dense tensor of the indexed shape: stride 0 along their broadcast dims.
  const Tensor& given = *inputs.back();
  const std::vector<int64_t>& shape = offsets.shape();
  std::vector<int64_t> spreadStrides(shape.size(), 0);
  size_t lead = shape.size() - given.rank();
  for (size_t k = 0; k < given.rank(); ++k)
    if (given.size(k) != 1) spreadStrides[lead + k] = given.strides()[k];
  Tensor values = given.view(shape, spreadStrides, given.offset()).contiguous();
  int64_t count = values.numel();
  const T* from = values.dataAs<T>();
  T* to = out.dataAs<T>();
  int64_t pre = offsets.preCount();
  int parts = parallelParts(pre, count / std::max<int64_t>(pre, 1));
  if (offsets.postIsOneElement()) {
    // One element per block position: a plain loop over the block per pre index (the visitor
    // below costs a call per element).
    const int64_t* blockOffsets = offsets.blockOffsets().data();
    int64_t blocks = offsets.blockCount();
    parallelRanges(parts, pre, [&](int, int64_t first, int64_t last) {
      for (int64_t i = first; i < last; ++i) {
        T* target = to + offsets.preOffset(i);
        const T* source = from + i * blocks;
        if (accumulate)
          for (int64_t b = 0; b < blocks; ++b)
            target[blockOffsets[b]] += source[b];
        else
          for (int64_t b = 0; b < blocks; ++b)
            target[blockOffsets[b]] = source[b];
      }
    });
    return;
  }
  parallelRanges(parts, pre, [&](int, int64_t first, int64_t last) {
    offsets.forEachRun(first, last, [&](int64_t result, int64_t at, int64_t run) {
      for (int64_t k = 0; k < run; ++k)
        to[at + k] = accumulate ? to[at + k] + from[result + k] : from[result + k];
    });
  });
}

// The dtypes index_put adds in.
inline bool indexPutAdds(DType dtype) {
  return dtype == DType::F32 || dtype == DType::F64 || dtype == DType::I32 || dtype == DType::I64;
}

// aten.index_put in its dtype: those indexPutAdds names in their own type, any other (a write,
// which kernel selection only gives this kernel) as words of its size.
inline void indexPut(const std::vector<const Tensor*>& inputs, bool accumulate, Tensor& out) {
  switch (out.dtype()) {
  case DType::F32:
    return indexPutAs<float>(inputs, accumulate, out);
  case DType::F64:
    return indexPutAs<double>(inputs, accumulate, out);
  case DType::I32:
    return indexPutAs<int32_t>(inputs, accumulate, out);
  case DType::I64:
    return indexPutAs<int64_t>(inputs, accumulate, out);
  default:
    withWordOfSize(dtypeSize(out.dtype()), [&](auto word) {
      indexPutAs<decltype(word)>(inputs, /*accumulate=*/false, out);
    });
  }
}

} // namespace loupe::library
