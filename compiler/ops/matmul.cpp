// Matrix products: aten.dot, aten.mm, aten.bmm, and the biased forms aten.addmm and
// aten.baddbmm (beta * self + alpha * product, self broadcast to the product's shape).
//
// The biased forms decompose into the plain product followed by pointwise ops (aten.mul.Scalar
// where alpha or beta is not 1, then aten.add.Tensor), so that fusion can turn the bias add into
// the epilogue of a generated kernel around a library product. An aten.addmm that a library
// kernel computes whole stays whole (passes/decomposition.cpp): on CUDA one whose bias cuBLASLt
// adds in its own epilogue, on the CPU any in f32 or f64 (the product accumulated onto the bias).
#include <algorithm>
#include <optional>

#include "compiler/ir/error.h"
#include "compiler/ops/broadcast.h"
#include "compiler/ops/graph_builder.h"
#include "compiler/ops/op_registry.h"
#include "compiler/ops/pointwise.h"

namespace loupe {
namespace {

std::string typeStr(const TensorType& t) {
  return Type(t).str();
}

// The two factors of a product, both of `rank`: [batch..., M, K] x [batch..., K, N], or two
// vectors of equal length for rank 1. They must share a floating dtype, as torch requires.
TensorType productType(std::string_view op, const TensorType& a, const TensorType& b, size_t rank) {
  if (a.rank() != rank || b.rank() != rank)
    throw Error("shape", std::string(op) + " expects two tensors of rank " + std::to_string(rank) +
                             ", got " + typeStr(a) + " and " + typeStr(b));
  if (a.dtype != b.dtype || !isFloating(a.dtype))
    throw Error("dtype", std::string(op) + " expects operands of one floating dtype, got " +
                             typeStr(a) + " and " + typeStr(b));
  const SymExpr& contractedA = a.shape[rank - 1];
  const SymExpr& contractedB = b.shape[rank == 1 ? 0 : rank - 2];
  // Sizes compare under the frontend's divisibility guards (see SymExpr).
  bool batchesMatch = std::equal(a.shape.begin(), a.shape.end() - std::min<size_t>(rank, 2),
                                 b.shape.begin(), SymExpr::equalWhenDivisionsExact);
  if (!SymExpr::equalWhenDivisionsExact(contractedA, contractedB) || !batchesMatch)
    throw Error("shape", std::string(op) + ": shapes " + typeStr(a) + " and " + typeStr(b) +
                             " cannot be multiplied (" + contractedA.str() + " vs " +
                             contractedB.str() + " contracted)");
  if (rank == 1) return a.withShape({});
  Shape shape(a.shape.begin(), a.shape.end() - 1);
  shape.push_back(b.shape[rank - 1]);
  return a.withShape(shape);
}

struct Product {
  const char* name;
  const char* biasedName; // nullptr: no biased form
  size_t rank;
  const char* summary;
};

// The naive product in double, over the flattened batch: out = alpha * a@b + beta * bias.
// `bias` (broadcast to out) is ignored when beta is 0, so its NaNs do not propagate, like torch.
void productReference(const Tensor& a, const Tensor& b, const Tensor* bias, double beta,
                      double alpha, Tensor& out) {
  const size_t rank = a.rank();
  const int64_t k = a.size(rank - 1);
  const int64_t m = rank == 1 ? 1 : a.size(rank - 2);
  const int64_t n = rank == 1 ? 1 : b.size(rank - 1);
  const int64_t batch = m * n == 0 ? 0 : out.numel() / (m * n);
  const auto av = a.toDoubles();
  const auto bv = b.toDoubles();
  std::optional<BroadcastIndexer> biasIndex;
  if (bias && beta != 0) biasIndex.emplace(bias->shape(), out.shape());
  for (int64_t p = 0; p < batch; ++p)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t l = 0; l < k; ++l)
          sum += av[static_cast<size_t>((p * m + i) * k + l)] *
                 bv[static_cast<size_t>((p * k + l) * n + j)];
        int64_t o = (p * m + i) * n + j;
        double value = alpha * sum;
        if (biasIndex) value += beta * bias->at((*biasIndex)(o));
        out.set(o, value);
      }
}

OpInfo productOp(const Product& p) {
  OpInfo info;
  info.name = p.name;
  info.kind = OpKind::Matmul;
  info.operands = {{"self"}, {p.rank == 1 ? "tensor" : "mat2"}};
  info.summary = p.summary;
  info.infer = [name = std::string(p.name), rank = p.rank](const std::vector<const Type*>& operands,
                                                           const AttrMap&) {
    return std::vector<Type>{productType(name, tensorOperand(operands, 0, name),
                                         tensorOperand(operands, 1, name), rank)};
  };
  info.reference = [](const std::vector<const Tensor*>& inputs, const AttrMap&,
                      std::vector<Tensor>& outputs) {
    productReference(*inputs[0], *inputs[1], nullptr, 0, 1, outputs[0]);
  };
  return info;
}

// Multiplies `value` by the scalar attribute `name` unless it is 1 (the attribute keeps its
// int or float kind, so type promotion sees what torch would).
Value* scaled(GraphBuilder& builder, Value* value, const AttrMap& attrs, std::string_view name) {
  if (attrs.getFloat(name, 1.0) == 1.0) return value;
  AttrMap other;
  other.set("other", *attrs.find(name));
  return builder.op("aten.mul.Scalar", {value}, std::move(other));
}

OpInfo biasedProductOp(const Product& p) {
  const std::string name = p.biasedName;
  const char* factor1 = p.rank == 2 ? "mat1" : "batch1";
  const char* factor2 = p.rank == 2 ? "mat2" : "batch2";
  OpInfo info;
  info.name = name;
  info.kind = OpKind::Matmul;
  info.operands = {{"self"}, {factor1}, {factor2}};
  info.attrs = {{"beta", SymExpr(1)}, {"alpha", SymExpr(1)}};
  info.summary = std::string("beta * self + alpha * (") + p.name + " of " + factor1 + " and " +
                 factor2 + "), self broadcast";
  info.infer = [name, rank = p.rank](const std::vector<const Type*>& operands, const AttrMap&) {
    const TensorType& self = tensorOperand(operands, 0, name);
    TensorType out =
        productType(name, tensorOperand(operands, 1, name), tensorOperand(operands, 2, name), rank);
    if (self.dtype != out.dtype)
      throw Error("dtype", name + ": self " + typeStr(self) +
                               " differs in dtype from the product " + typeStr(out));
    if (broadcastShapes(self.shape, out.shape, name) != out.shape)
      throw Error("shape", name + ": self " + typeStr(self) +
                               " does not broadcast to the product " + typeStr(out));
    return std::vector<Type>{out};
  };
  info.reference = [](const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
                      std::vector<Tensor>& outputs) {
    productReference(*inputs[1], *inputs[2], inputs[0], attrs.getFloat("beta", 1.0),
                     attrs.getFloat("alpha", 1.0), outputs[0]);
  };
  info.decompose = [product = std::string(p.name)](Node& node, GraphBuilder& builder) {
    const AttrMap& attrs = node.attrs();
    Value* result =
        scaled(builder, builder.op(product, {node.operand(1), node.operand(2)}), attrs, "alpha");
    if (attrs.getFloat("beta", 1.0) == 0.0) return std::vector<Value*>{result};
    AttrMap addAttrs;
    addAttrs.set("alpha", SymExpr(1));
    Value* bias = scaled(builder, node.operand(0), attrs, "beta");
    return std::vector<Value*>{builder.op("aten.add.Tensor", {result, bias}, std::move(addAttrs))};
  };
  return info;
}

} // namespace

void registerMatmulOps(OpRegistry& registry) {
  const Product products[] = {
      {"aten.dot", nullptr, 1, "the inner product of two vectors"},
      {"aten.mm", "aten.addmm", 2, "[M,K] x [K,N] matrix product"},
      {"aten.bmm", "aten.baddbmm", 3, "[B,M,K] x [B,K,N] batched matrix product"},
  };
  for (const Product& p : products) {
    registry.add(productOp(p));
    if (p.biasedName) registry.add(biasedProductOp(p));
  }
}

} // namespace loupe
