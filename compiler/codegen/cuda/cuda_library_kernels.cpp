// The ops the CUDA backend runs as library kernels (cuda_library_kernels.h).
#include "compiler/codegen/cuda/cuda_library_kernels.h"

#include <cstring>
#include <limits>

#include "compiler/ir/error.h"
#include "compiler/ops/factory.h"
#include "compiler/ops/op_registry.h"
#include "compiler/tensor/tensor.h"

namespace loupe {

namespace {

bool refuse(std::string* whyNot, std::string why) {
  if (whyNot) *whyNot = std::move(why);
  return false;
}

bool isOne(const AttrMap& attrs, const char* name) {
  return attrs.getFloat(name, 1.0) == 1.0;
}

bool isTanhGelu(const Node& node) {
  const Attribute* approximate = node.attrs().find("approximate");
  const auto* text = approximate ? std::get_if<std::string>(approximate) : nullptr;
  return text && *text == "tanh";
}

} // namespace

bool isCudaEpilogueProduct(const Node& node) {
  return (node.op() == "aten.mm" || node.op() == "aten.addmm") &&
         runsAsCudaLibraryKernel(node, nullptr);
}

bool cudaLibraryKernelAddsBias(const Node& node) {
  return node.op() == "aten.addmm";
}

bool runsAsCudaLibraryKernel(const Node& node, std::string* whyNot) {
  if (node.op() == "loupe.fused")
    return cudaMatmulEpilogueOf(node) ? true
                                      : refuse(whyNot, "a fused group that is not a product and "
                                                       "its epilogue activation");
  const std::string& op = node.op();
  bool product = op == "aten.mm" || op == "aten.bmm";
  if (!product && !cudaLibraryKernelAddsBias(node))
    return refuse(whyNot, "no CUDA library kernel for " + op);
  if (node.numResults() != 1 || !node.result()->type().isTensor())
    return refuse(whyNot, op + " without one tensor result");
  const TensorType& result = node.result()->tensorType();
  if (result.dtype != DType::F32 && result.dtype != DType::BF16 && result.dtype != DType::F16)
    return refuse(whyNot,
                  "cuBLASLt takes f32, bf16 and f16, not " + std::string(dtypeName(result.dtype)));
  if (product) return true;
  // aten.addmm(self, mat1, mat2): beta * self + alpha * mat1 @ mat2.
  if (!isOne(node.attrs(), "beta") || !isOne(node.attrs(), "alpha"))
    return refuse(whyNot, "cuBLASLt's bias epilogue adds the bias once to the plain product "
                          "(beta and alpha 1)");
  const Value* bias = node.operand(0);
  if (!bias || !bias->type().isTensor()) return refuse(whyNot, "aten.addmm without a bias tensor");
  const TensorType& b = bias->tensorType();
  bool row = (b.rank() == 1 && b.shape[0] == result.shape[1]) ||
             (b.rank() == 2 && b.shape[0] == SymExpr(1) && b.shape[1] == result.shape[1]);
  if (!row || b.dtype != result.dtype)
    return refuse(whyNot, "cuBLASLt's bias epilogue adds one row of the output's dtype, not " +
                              Type(b).str());
  return true;
}

bool isCudaGatherOp(const Node& node, std::string* whyNot) {
  if (node.op() != "aten.embedding") return refuse(whyNot, "not a row lookup");
  const Value* table = node.operand(0);
  const Value* indices = node.numOperands() > 1 ? node.operand(1) : nullptr;
  if (!table || !indices || !table->type().isTensor() || !indices->type().isTensor() ||
      node.numResults() != 1)
    return refuse(whyNot, "aten.embedding without a table, indices and one result");
  if (table->tensorType().rank() != 2)
    return refuse(whyNot, "the row gather takes a 2-D table, not " + table->type().str());
  DType index = indices->tensorType().dtype;
  if (index != DType::I64 && index != DType::I32)
    return refuse(whyNot, "the row gather takes int64 or int32 indices, not " +
                              std::string(dtypeName(index)));
  return true;
}

CudaScatterShape cudaScatterShape(const Node& node) {
  CudaScatterShape shape;
  size_t blockRank = 0;
  for (size_t i = 1; i + 1 < node.numOperands(); ++i)
    if (const Value* index = node.operand(i)) {
      ++shape.indexCount;
      blockRank = std::max(blockRank, index->tensorType().rank());
    }
  shape.rank = node.result()->tensorType().rank() - shape.indexCount + blockRank;
  return shape;
}

bool isCudaScatterOp(const Node& node, std::string* whyNot) {
  if (node.op() != "aten.index_put") return refuse(whyNot, "not an index_put");
  if (node.numOperands() < 3 || node.numResults() != 1 || !node.operand(0) ||
      !node.operand(node.numOperands() - 1))
    return refuse(whyNot, "aten.index_put without self, an index and values");
  for (size_t i = 1; i + 1 < node.numOperands(); ++i) {
    const Value* index = node.operand(i);
    if (!index) continue;
    DType dtype = index->tensorType().dtype;
    if (dtype != DType::I64 && dtype != DType::I32)
      return refuse(whyNot, "the scatter takes int64 or int32 indices, not " +
                                std::string(dtypeName(dtype)));
  }
  if (cudaScatterShape(node).rank > 8)
    return refuse(whyNot, "the scatter takes indexed shapes of rank 8 at most");
  DType dtype = node.result()->tensorType().dtype;
  bool adds =
      dtype == DType::F32 || dtype == DType::F64 || dtype == DType::I32 || dtype == DType::I64;
  if (node.attrs().getBool("accumulate", false) && !adds)
    return refuse(whyNot, "the scatter adds atomically in f32, f64, i32 or i64 only, not " +
                              std::string(dtypeName(dtype)));
  return true;
}

std::optional<CudaFill> cudaFillOf(const Node& node, const AttrMap& attrs, std::string* whyNot) {
  auto no = [&](std::string why) -> std::optional<CudaFill> {
    refuse(whyNot, std::move(why));
    return std::nullopt;
  };
  if (!fillsOneValue(node.op())) return no("not a factory op of one value");
  const OpInfo* info = OpRegistry::global().find(node.op());
  if (!info || !info->reference) return no("no implementation of " + node.op());
  if (node.numResults() != 1 || !node.result()->type().isTensor())
    return no(node.op() + " without one tensor result");
  // The value in the result's dtype: the op's own implementation on one element.
  DType dtype = node.result()->tensorType().dtype;
  std::vector<Tensor> one{Tensor::empty(dtype, {})};
  try {
    info->reference({}, attrs, one);
  } catch (const Error& error) {
    return no(std::string("the fill value is not known before the run: ") + error.what());
  }
  size_t bytes = dtypeSize(dtype);
  unsigned char raw[8] = {};
  std::memcpy(raw, one[0].data(), bytes);
  CudaFill fill;
  if (bytes == 8) {
    if (std::memcmp(raw, raw + 4, 4) != 0)
      return no("an 8-byte value whose halves differ is not a 4-byte memset");
    fill.wordsPerElement = 2;
    bytes = 4;
  }
  if (bytes != 1 && bytes != 2 && bytes != 4)
    return no("no memset of " + std::to_string(bytes) + "-byte words");
  fill.wordBytes = static_cast<unsigned>(bytes);
  std::memcpy(&fill.word, raw, bytes);
  return fill;
}

bool isCudaEpilogueActivation(const Node& node) {
  if (node.op() == "aten.relu") return true;
  if (node.op() != "aten.gelu") return false;
  // cuBLASLt's GELU is a fast approximation: within a bf16 or f16 rounding, but in f32 about 20x
  // eager's own error against float64 (5e-6 against 3e-7, measured on an H100).
  if (node.result()->tensorType().dtype == DType::F32) return false;
  return isTanhGelu(node);
}

bool isCudaEpilogueGeluBackward(const Node& node) {
  if (node.op() != "aten.gelu_backward" || node.numOperands() != 2 || node.numResults() != 1)
    return false;
  // Only where the forward's GELU may be the epilogue's: its derivative is as approximate.
  const TensorType& result = node.result()->tensorType();
  if (!isReducedFloat(result.dtype) || !isTanhGelu(node)) return false;
  // Elementwise with no broadcast: the gradient, the pre-activation and the result alike.
  for (const Value* operand : node.operands())
    if (!operand || !operand->type().isTensor() || operand->tensorType().dtype != result.dtype ||
        operand->tensorType().shape != result.shape)
      return false;
  return true;
}

std::string cudaEpilogueAuxRefusal(const TensorType& product) {
  if (product.rank() != 2)
    return "the auxiliary matrix of a product is 2-D, not " + Type(product).str();
  std::optional<int64_t> n = product.shape[1].constant();
  if (!n)
    return "its row length n = " + product.shape[1].str() +
           " is not known to be a multiple of 8, which cuBLASLt needs of the auxiliary matrix's "
           "leading dimension";
  if (*n % 8 != 0)
    return "its row length n = " + std::to_string(*n) +
           " is not a multiple of 8, which cuBLASLt needs of the auxiliary matrix's leading "
           "dimension";
  return "";
}

int64_t cudaMatmulAlignedColumns(DType dtype, int64_t batch, int64_t m, int64_t n) {
  if (!isReducedFloat(dtype) || batch != 1 || n % 8 == 0 || m < 128 || n < 8192) return 0;
  return n / 8 * 8;
}

SymExpr cudaMatmulStagingBytes(const Node& product) {
  if (product.op() != "aten.mm" && product.op() != "aten.addmm") return SymExpr();
  const TensorType& out = product.result()->tensorType();
  if (out.rank() != 2) return SymExpr();
  std::optional<int64_t> n = out.shape[1].constant();
  // The smallest m the rule splits at stands for a symbolic one.
  int64_t m = out.shape[0].constant().value_or(std::numeric_limits<int64_t>::max());
  if (!n || cudaMatmulAlignedColumns(out.dtype, 1, m, *n) == 0) return SymExpr();
  return out.shape[0] * SymExpr(cudaMatmulStagingPitch(*n) * int64_t(dtypeSize(out.dtype)));
}

std::optional<CudaMatmulEpilogue> cudaMatmulEpilogueOf(const Node& node) {
  const Attribute* kind = node.op() == "loupe.fused" ? node.attrs().find("kind") : nullptr;
  const auto* kindText = kind ? std::get_if<std::string>(kind) : nullptr;
  if (!kindText || *kindText != "epilogue" || !node.hasBody()) return std::nullopt;
  // Read from the body's results back, without a snapshot of its nodes: the runtime asks on
  // every call.
  const Graph& body = *node.body();
  const std::vector<Value*>& outputs = body.outputs();
  if (body.numNodes() != 2 || outputs.empty() || outputs.size() > 2) return std::nullopt;
  // The epilogue's node is the result that reads the product; with two results, the other is
  // the product itself.
  for (size_t r = 0; r < outputs.size(); ++r) {
    const Node* epilogue = outputs[r]->definingNode();
    const Value* read = epilogue && epilogue->numOperands() ? epilogue->operand(0) : nullptr;
    const Node* product = read ? read->definingNode() : nullptr;
    if (!product || !isCudaEpilogueProduct(*product)) continue;
    CudaMatmulEpilogue found{product, CudaMatmulEpilogue::Kind::Relu, r, 0, 0};
    if (outputs.size() == 2) {
      if (outputs[1 - r] != read || epilogue->op() != "aten.gelu" ||
          !isCudaEpilogueActivation(*epilogue) ||
          !cudaEpilogueAuxRefusal(read->tensorType()).empty())
        return std::nullopt;
      found.kind = CudaMatmulEpilogue::Kind::GeluAux;
      found.auxResult = 1 - r;
      return found;
    }
    if (isCudaEpilogueActivation(*epilogue)) {
      found.kind = epilogue->op() == "aten.relu" ? CudaMatmulEpilogue::Kind::Relu
                                                 : CudaMatmulEpilogue::Kind::Gelu;
      return found;
    }
    const Value* pre = epilogue->numOperands() == 2 ? epilogue->operand(1) : nullptr;
    if (product->op() != "aten.mm" || !isCudaEpilogueGeluBackward(*epilogue) || !pre ||
        pre->definingNode() || !cudaEpilogueAuxRefusal(read->tensorType()).empty())
      return std::nullopt;
    found.kind = CudaMatmulEpilogue::Kind::GeluBackward;
    found.auxInput = pre->index();
    return found;
  }
  return std::nullopt;
}

} // namespace loupe
