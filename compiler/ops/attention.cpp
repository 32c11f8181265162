// Attention: the fused scaled dot-product attention that torch's CPU backend runs for
// F.scaled_dot_product_attention (transformers' default "sdpa" attention), and its backward.
//
// Per batch b and query head h, with scores s_ij = scale * q_i . k_j + mask_ij (and s_ij = -inf
// above the diagonal when is_causal):
//   out_i = sum_j softmax_j(s_i) v_j,   logsumexp_i = log(sum_j exp(s_ij)).
// Key/value heads may be fewer than query heads (grouped-query attention): query head h reads
// key/value head h / (Hq / Hkv), as torch's repeat_interleave does. As torch's kernel does, a
// row with every score masked out gives zeros and a logsumexp of 0, and neither dropout nor a
// boolean mask is accepted (torch falls back to its math path for dropout and turns boolean
// masks into additive ones before calling the kernel).
//
// The backward reference recomputes the softmax from q and k in double instead of trusting the
// saved out and logsumexp (which it takes for schema compatibility): the oracle then depends
// only on the inputs that define the function.
#include <cmath>
#include <limits>

#include "compiler/ir/error.h"
#include "compiler/ops/broadcast.h"
#include "compiler/ops/op_registry.h"
#include "compiler/ops/pointwise.h"

namespace loupe {
namespace {

constexpr std::string_view kForward = "aten._scaled_dot_product_flash_attention_for_cpu";
constexpr std::string_view kBackward = "aten._scaled_dot_product_flash_attention_for_cpu_backward";

using Doubles = std::vector<double>;

[[noreturn]] void shapeError(std::string_view op, const std::string& message) {
  throw Error("shape", std::string(op) + ": " + message);
}

void expectShape(const TensorType& actual, const Shape& expected, std::string_view op,
                 const char* what) {
  if (actual.shape != expected)
    shapeError(op, std::string(what) + " has shape [" + shapeStr(actual.shape) + "], expected [" +
                       shapeStr(expected) + "]");
}

const Type* optionalOperand(const std::vector<const Type*>& operands, size_t index) {
  return index < operands.size() ? operands[index] : nullptr;
}

// Checks query/key/value (operands 0..2 from `first`), the mask and the attributes shared by
// the forward and the backward; returns the query's type.
const TensorType& checkAttention(const std::vector<const Type*>& operands, size_t first,
                                 const Type* mask, const AttrMap& attrs, std::string_view op) {
  const TensorType& q = tensorOperand(operands, first, op);
  const TensorType& k = tensorOperand(operands, first + 1, op);
  const TensorType& v = tensorOperand(operands, first + 2, op);
  if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4)
    shapeError(op, "query, key and value must be 4-D [batch, heads, seq, head_dim], got [" +
                       shapeStr(q.shape) + "], [" + shapeStr(k.shape) + "] and [" +
                       shapeStr(v.shape) + "]");
  if (!isFloating(q.dtype) || k.dtype != q.dtype || v.dtype != q.dtype)
    shapeError(op, "query, key and value must share one floating dtype, got " +
                       std::string(dtypeName(q.dtype)) + ", " + std::string(dtypeName(k.dtype)) +
                       " and " + std::string(dtypeName(v.dtype)));
  expectShape(v, k.shape, op, "value");
  if (k.shape[0] != q.shape[0] || k.shape[3] != q.shape[3])
    shapeError(op, "key [" + shapeStr(k.shape) +
                       "] does not match the batch and head size of query [" + shapeStr(q.shape) +
                       "]");
  const SymExpr &queryHeads = q.shape[1], &kvHeads = k.shape[1];
  bool grouped = queryHeads.isConstant() && kvHeads.isConstant() && *kvHeads.constant() > 0 &&
                 *queryHeads.constant() % *kvHeads.constant() == 0;
  if (queryHeads != kvHeads && !grouped)
    shapeError(op, "the query's " + queryHeads.str() + " heads are not a multiple of the " +
                       kvHeads.str() + " key/value heads");
  if (attrs.getFloat("dropout_p", 0.0) != 0.0)
    shapeError(op, "dropout is not supported (torch's CPU kernel does not support it either)");
  if (mask && mask->isTensor()) {
    const TensorType& m = mask->tensor();
    if (m.dtype != q.dtype)
      shapeError(op, "the mask must be additive, of the query's dtype " +
                         std::string(dtypeName(q.dtype)) + ", got " +
                         std::string(dtypeName(m.dtype)));
    Shape scores = {q.shape[0], q.shape[1], q.shape[2], k.shape[2]};
    if (broadcastShapes(m.shape, scores, op) != scores)
      shapeError(op, "the mask [" + shapeStr(m.shape) + "] does not broadcast to the scores [" +
                         shapeStr(scores) + "]");
  }
  return q;
}

std::vector<Type> inferForward(const std::vector<const Type*>& operands, const AttrMap& attrs) {
  const TensorType& q = checkAttention(operands, 0, optionalOperand(operands, 3), attrs, kForward);
  TensorType logsumexp = q.withShape({q.shape[0], q.shape[1], q.shape[2]});
  // torch keeps logsumexp in the accumulation dtype.
  return {q.withShape(q.shape), logsumexp.withDType(accumulationDType(q.dtype))};
}

// Operands: grad_out, query, key, value, out, logsumexp, attn_mask.
std::vector<Type> inferBackward(const std::vector<const Type*>& operands, const AttrMap& attrs) {
  const TensorType& q = checkAttention(operands, 1, optionalOperand(operands, 6), attrs, kBackward);
  expectShape(tensorOperand(operands, 0, kBackward), q.shape, kBackward, "grad_out");
  expectShape(tensorOperand(operands, 4, kBackward), q.shape, kBackward, "out");
  expectShape(tensorOperand(operands, 5, kBackward), {q.shape[0], q.shape[1], q.shape[2]},
              kBackward, "logsumexp");
  std::vector<Type> grads;
  for (size_t i = 1; i <= 3; ++i)
    grads.push_back(operands[i]->tensor().withShape(operands[i]->tensor().shape));
  return grads;
}

// One attention problem on concrete tensors, in double.
class Attention {
public:
  Attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask,
            const AttrMap& attrs)
      : batch_(q.size(0)), heads_(q.size(1)), kvHeads_(k.size(1)), queries_(q.size(2)),
        keys_(k.size(2)), headDim_(q.size(3)), q_(q.toDoubles()), k_(k.toDoubles()),
        v_(v.toDoubles()), causal_(attrs.getBool("is_causal", false)),
        scale_(attrs.isNone("scale") ? 1.0 / std::sqrt(static_cast<double>(headDim_))
                                     : attrs.getFloat("scale")) {
    if (mask) {
      mask_ = mask->toDoubles();
      maskIndex_.emplace(mask->shape(), std::vector<int64_t>{batch_, heads_, queries_, keys_});
    }
  }

  // Calls visit(b, h, kvHead, i) for every query row.
  template <typename Visit>
  void forEachRow(Visit visit) const {
    for (int64_t b = 0; b < batch_; ++b)
      for (int64_t h = 0; h < heads_; ++h)
        for (int64_t i = 0; i < queries_; ++i)
          visit(b, h, h / (heads_ / kvHeads_), i);
  }

  // Softmax weights of row i of (b, h) over the keys, all zero when every score is masked,
  // and the row's logsumexp.
  std::pair<Doubles, double> weights(int64_t b, int64_t h, int64_t kvHead, int64_t i) const {
    Doubles scores(static_cast<size_t>(keys_));
    double max = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < keys_; ++j) {
      double s = -std::numeric_limits<double>::infinity();
      if (!causal_ || j <= i) {
        double dot = 0;
        for (int64_t e = 0; e < headDim_; ++e)
          dot += q_[query(b, h, i, e)] * k_[key(b, kvHead, j, e)];
        s = scale_ * dot;
        if (maskIndex_)
          s += mask_[static_cast<size_t>(
              (*maskIndex_)(((b * heads_ + h) * queries_ + i) * keys_ + j))];
      }
      scores[static_cast<size_t>(j)] = s;
      max = std::max(max, s);
    }
    if (max == -std::numeric_limits<double>::infinity()) return {Doubles(scores.size(), 0.0), 0.0};
    double sum = 0;
    for (double& s : scores)
      sum += s = std::exp(s - max);
    for (double& s : scores)
      s /= sum;
    return {scores, max + std::log(sum)};
  }

  size_t query(int64_t b, int64_t h, int64_t i, int64_t e) const {
    return static_cast<size_t>(((b * heads_ + h) * queries_ + i) * headDim_ + e);
  }
  size_t key(int64_t b, int64_t h, int64_t j, int64_t e) const {
    return static_cast<size_t>(((b * kvHeads_ + h) * keys_ + j) * headDim_ + e);
  }
  size_t row(int64_t b, int64_t h, int64_t i) const {
    return static_cast<size_t>((b * heads_ + h) * queries_ + i);
  }

  int64_t keys() const { return keys_; }
  int64_t headDim() const { return headDim_; }
  double scale() const { return scale_; }
  const Doubles& q() const { return q_; }
  const Doubles& k() const { return k_; }
  const Doubles& v() const { return v_; }

private:
  int64_t batch_, heads_, kvHeads_, queries_, keys_, headDim_;
  Doubles q_, k_, v_, mask_;
  std::optional<BroadcastIndexer> maskIndex_;
  bool causal_;
  double scale_;
};

void store(Tensor& out, const Doubles& values) {
  for (int64_t i = 0; i < out.numel(); ++i)
    out.set(i, values[static_cast<size_t>(i)]);
}

void forwardReference(const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
                      std::vector<Tensor>& outputs) {
  Attention attention(*inputs[0], *inputs[1], *inputs[2], inputs[3], attrs);
  Doubles out(static_cast<size_t>(outputs[0].numel()), 0.0);
  Doubles logsumexp(static_cast<size_t>(outputs[1].numel()));
  attention.forEachRow([&](int64_t b, int64_t h, int64_t kvHead, int64_t i) {
    auto [p, lse] = attention.weights(b, h, kvHead, i);
    logsumexp[attention.row(b, h, i)] = lse;
    for (int64_t j = 0; j < attention.keys(); ++j)
      for (int64_t e = 0; e < attention.headDim(); ++e)
        out[attention.query(b, h, i, e)] +=
            p[static_cast<size_t>(j)] * attention.v()[attention.key(b, kvHead, j, e)];
  });
  store(outputs[0], out);
  store(outputs[1], logsumexp);
}

// With P the softmax weights: dV = P^T dO, dP = dO V^T, dS = P * (dP - rowsum(P * dP)),
// dQ = scale dS K, dK = scale dS^T Q (summed over the query heads sharing a key/value head).
void backwardReference(const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
                       std::vector<Tensor>& outputs) {
  Attention attention(*inputs[1], *inputs[2], *inputs[3], inputs[6], attrs);
  Doubles gradOut = inputs[0]->toDoubles();
  Doubles gradQ(attention.q().size(), 0.0), gradK(attention.k().size(), 0.0),
      gradV(attention.v().size(), 0.0);
  const int64_t keys = attention.keys(), headDim = attention.headDim();
  attention.forEachRow([&](int64_t b, int64_t h, int64_t kvHead, int64_t i) {
    Doubles p = attention.weights(b, h, kvHead, i).first;
    Doubles dp(p.size(), 0.0);
    double rowDot = 0;
    for (int64_t j = 0; j < keys; ++j) {
      auto jj = static_cast<size_t>(j);
      for (int64_t e = 0; e < headDim; ++e) {
        double g = gradOut[attention.query(b, h, i, e)];
        dp[jj] += g * attention.v()[attention.key(b, kvHead, j, e)];
        gradV[attention.key(b, kvHead, j, e)] += p[jj] * g;
      }
      rowDot += p[jj] * dp[jj];
    }
    for (int64_t j = 0; j < keys; ++j) {
      double ds =
          p[static_cast<size_t>(j)] * (dp[static_cast<size_t>(j)] - rowDot) * attention.scale();
      for (int64_t e = 0; e < headDim; ++e) {
        gradQ[attention.query(b, h, i, e)] += ds * attention.k()[attention.key(b, kvHead, j, e)];
        gradK[attention.key(b, kvHead, j, e)] += ds * attention.q()[attention.query(b, h, i, e)];
      }
    }
  });
  store(outputs[0], gradQ);
  store(outputs[1], gradK);
  store(outputs[2], gradV);
}

} // namespace

void registerAttentionOps(OpRegistry& registry) {
  OpInfo forward;
  forward.name = std::string(kForward);
  forward.operands = {{"query"}, {"key"}, {"value"}, {"attn_mask", true}};
  forward.attrs = {{"dropout_p", 0.0}, {"is_causal", false}, {"scale", NoneAttr{}}};
  forward.numResults = 2;
  forward.summary = "scaled dot-product attention returning (out, logsumexp)";
  forward.infer = inferForward;
  forward.reference = forwardReference;
  registry.add(std::move(forward));

  OpInfo backward;
  backward.name = std::string(kBackward);
  backward.operands = {{"grad_out"},  {"query"},          {"key"}, {"value"}, {"out"},
                       {"logsumexp"}, {"attn_mask", true}};
  backward.attrs = {
      {"dropout_p", std::nullopt}, {"is_causal", std::nullopt}, {"scale", NoneAttr{}}};
  backward.numResults = 3;
  backward.summary =
      "gradients of scaled dot-product attention: (grad_query, grad_key, grad_value)";
  backward.infer = inferBackward;
  backward.reference = backwardReference;
  registry.add(std::move(backward));
}

} // namespace loupe
