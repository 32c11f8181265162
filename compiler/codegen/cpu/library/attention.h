// Scaled dot-product attention and its backward in the input's precision, blocked over query
// rows: per (batch, head) and block, one BLAS gemm gives the scores scale * Q K^T, a
// max-subtracted softmax (softmax_row.h, vector loops) turns them into weights, and one gemm
// gives P V. The backward recomputes the weights from q and k the same way (as the reference
// does, so it depends only on the inputs that define the function) and forms every gradient with
// gemms. Semantics follow compiler/ops/attention.cpp: additive masks broadcast to [batch, heads,
// queries, keys], causal masking keeps key j <= query i, grouped-query heads share a key/value
// head, and a row whose scores are all masked gets zero weights and a logsumexp of 0.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "compiler/codegen/cpu/library/blas.h"
#include "compiler/codegen/cpu/library/parallel_ranges.h"
#include "compiler/codegen/cpu/library/scratch.h"
#include "compiler/codegen/cpu/library/softmax_row.h"
#include "compiler/ir/attribute.h"
#include "compiler/tensor/tensor.h"

namespace loupe::library {

// Query rows per block: the block's scores and weights stay in cache for the gemms that read
// them, whatever the sequence length.
constexpr int64_t kAttentionRowBlock = 64;

// The sizes and options of one attention call; query, key and value are [batch, heads, seq,
// head_dim] views with any strides.
template <typename T>
class AttentionProblem {
public:
  AttentionProblem(const Tensor& q, const Tensor& k, const Tensor* mask, const AttrMap& attrs)
      : batch(q.size(0)), heads(q.size(1)), kvHeads(k.size(1)), queries(q.size(2)), keys(k.size(2)),
        headDim(q.size(3)), causal(attrs.getBool("is_causal", false)),
        scale(attrs.isNone("scale") ? 1.0 / std::sqrt(static_cast<double>(headDim))
                                    : attrs.getFloat("scale")),
        mask_(mask ? mask->dataAs<T>() : nullptr) {
    if (!mask) return;
    // Right-aligned broadcast to the scores' 4 dims: a broadcast dim reads one element.
    size_t lead = 4 - mask->rank();
    for (size_t d = 0; d < mask->rank(); ++d)
      maskStrides_[lead + d] = mask->size(d) == 1 ? 0 : mask->strides()[d];
  }

  int64_t kvHeadOf(int64_t head) const { return head / (heads / kvHeads); }

  // How many leading keys rows below rowEnd may see: causal rows never look past themselves.
  int64_t visibleKeys(int64_t rowEnd) const { return causal ? std::min(keys, rowEnd) : keys; }

  // Head (b, h) of a 4-D tensor as a BLAS matrix [seq, head_dim].
  static BlasMatrix headMatrix(const Tensor& t, int64_t b, int64_t h) {
    return asBlasMatrix(t.view({t.size(2), t.size(3)}, {t.strides()[2], t.strides()[3]},
                               t.offset() + b * t.strides()[0] + h * t.strides()[1]));
  }

  // Softmax weights of query rows [first, first + rows) of head (b, h) over the first `cols`
  // keys into p (row-major, leading dimension cols); the rows' logsumexp into lse when given.
  void weights(const BlasMatrix& q, const BlasMatrix& k, int64_t b, int64_t h, int64_t first,
               int64_t rows, int64_t cols, T* p, T* lse) const {
    gemmBlocks<T>(q, first, k.transposed(), 0, rows, cols, headDim, p, cols, false, scale);
    for (int64_t r = 0; r < rows; ++r) {
      int64_t i = first + r;
      T* s = p + r * cols;
      if (mask_) {
        const T* m = mask_ + b * maskStrides_[0] + h * maskStrides_[1] + i * maskStrides_[2];
        for (int64_t j = 0; j < cols; ++j)
          s[j] += m[j * maskStrides_[3]];
      }
      // A causal row's keys past the query get zero weight without an exp each.
      int64_t visible = causal ? std::min(cols, i + 1) : cols;
      std::fill(s + visible, s + cols, T(0));
      T logSumExp = softmaxRow(s, visible);
      if (logSumExp == -std::numeric_limits<T>::infinity()) {
        std::fill(s, s + visible, T(0));
        logSumExp = 0;
      }
      if (lse) lse[r] = logSumExp;
    }
  }

  const int64_t batch, heads, kvHeads, queries, keys, headDim;
  const bool causal;
  const double scale;

private:
  const T* mask_;
  int64_t maskStrides_[4] = {0, 0, 0, 0};
};

// A row-major scratch block as BLAS reads it.
inline BlasMatrix rowMajor(const void* data, int64_t leading) {
  return {data, CblasNoTrans, static_cast<int>(std::max<int64_t>(leading, 1)), {}};
}

// The heads of an attention call split across the library threads, each range of heads on one
// thread with single-threaded products: a head's products (a 64-row block against a few hundred
// keys) are too small for BLAS's own split to pay, and its softmax runs on one thread anyway.
// `body(b, h)` runs every head of kv head group (b, kv) in order: heads that share a key/value
// head stay on one thread, so a backward's key and value gradients have one writer.
template <typename T, typename Body>
void forEachKvGroup(const AttentionProblem<T>& problem, Body body) {
  int64_t groups = problem.batch * problem.kvHeads, perGroup = problem.heads / problem.kvHeads;
  int parts = static_cast<int>(std::min<int64_t>(
      parallelParts(groups, perGroup * problem.queries * problem.keys * problem.headDim), groups));
  parallelRanges(std::max(parts, 1), groups, [&](int, int64_t first, int64_t last) {
    for (int64_t group = first; group < last; ++group)
      for (int64_t g = 0; g < perGroup; ++g)
        body(group / problem.kvHeads, group % problem.kvHeads * perGroup + g);
  });
}

// Operands: query, key, value, attn_mask?; results: out [B, H, Lq, E] and logsumexp [B, H, Lq].
template <typename T>
void attention(const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
               std::vector<Tensor>& outputs) {
  const Tensor &q = *inputs[0], &k = *inputs[1], &v = *inputs[2];
  AttentionProblem<T> problem(q, k, inputs.size() > 3 ? inputs[3] : nullptr, attrs);
  const int64_t headDim = problem.headDim, queries = problem.queries;
  T* out = outputs[0].dataAs<T>();
  T* lse = outputs[1].dataAs<T>();
  forEachKvGroup(problem, [&](int64_t b, int64_t h) {
    Scratch<T> p(kAttentionRowBlock * problem.keys);
    int64_t kv = problem.kvHeadOf(h), head = b * problem.heads + h;
    BlasMatrix qm = problem.headMatrix(q, b, h), km = problem.headMatrix(k, b, kv),
               vm = problem.headMatrix(v, b, kv);
    for (int64_t first = 0; first < queries; first += kAttentionRowBlock) {
      int64_t rows = std::min(kAttentionRowBlock, queries - first);
      int64_t cols = problem.visibleKeys(first + rows);
      problem.weights(qm, km, b, h, first, rows, cols, p.data(), lse + head * queries + first);
      gemmBlocks<T>(rowMajor(p.data(), cols), 0, vm, 0, rows, headDim, cols,
                    out + (head * queries + first) * headDim, headDim);
    }
  });
}

// Operands: grad_out, query, key, value, out, logsumexp, attn_mask?; results: grad_query,
// grad_key, grad_value. With P the weights: dV = P^T dO, dP = dO V^T, dS = P * (dP -
// rowsum(P * dP)) * scale, dQ = dS K, dK = dS^T Q; key/value gradients sum over the blocks and
// over the query heads that share the key/value head.
template <typename T>
void attentionBackward(const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
                       std::vector<Tensor>& outputs) {
  const Tensor &gradOut = *inputs[0], &q = *inputs[1], &k = *inputs[2], &v = *inputs[3];
  AttentionProblem<T> problem(q, k, inputs.size() > 6 ? inputs[6] : nullptr, attrs);
  const int64_t headDim = problem.headDim, queries = problem.queries, keys = problem.keys;
  for (size_t i = 1; i <= 2; ++i)
    std::fill_n(outputs[i].dataAs<T>(), outputs[i].numel(), T(0));
  forEachKvGroup(problem, [&](int64_t b, int64_t h) {
    Scratch<T> p(kAttentionRowBlock * keys), ds(kAttentionRowBlock * keys);
    int64_t kv = problem.kvHeadOf(h);
    BlasMatrix qm = problem.headMatrix(q, b, h), km = problem.headMatrix(k, b, kv),
               vm = problem.headMatrix(v, b, kv), gm = problem.headMatrix(gradOut, b, h);
    T* gradQ = outputs[0].dataAs<T>() + (b * problem.heads + h) * queries * headDim;
    T* gradK = outputs[1].dataAs<T>() + (b * problem.kvHeads + kv) * keys * headDim;
    T* gradV = outputs[2].dataAs<T>() + (b * problem.kvHeads + kv) * keys * headDim;
    for (int64_t first = 0; first < queries; first += kAttentionRowBlock) {
      int64_t rows = std::min(kAttentionRowBlock, queries - first);
      int64_t cols = problem.visibleKeys(first + rows);
      problem.weights(qm, km, b, h, first, rows, cols, p.data(), nullptr);
      BlasMatrix pm = rowMajor(p.data(), cols), dsm = rowMajor(ds.data(), cols);
      gemmBlocks<T>(pm.transposed(), 0, gm, first, cols, headDim, rows, gradV, headDim, true);
      gemmBlocks<T>(gm, first, vm.transposed(), 0, rows, cols, headDim, ds.data(), cols);
      for (int64_t r = 0; r < rows; ++r)
        softmaxBackwardRow(p.data() + r * cols, ds.data() + r * cols, cols,
                           static_cast<T>(problem.scale));
      gemmBlocks<T>(dsm, 0, km, 0, rows, headDim, cols, gradQ + first * headDim, headDim);
      gemmBlocks<T>(dsm.transposed(), 0, qm, first, cols, headDim, rows, gradK, headDim, true);
    }
  });
}

} // namespace loupe::library
