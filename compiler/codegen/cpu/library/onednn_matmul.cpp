// f32 and bf16 products through oneDNN (onednn_matmul.h).
#include "compiler/codegen/cpu/library/onednn_matmul.h"

#include <optional>
#include <string>
#include <unordered_map>

#include "compiler/codegen/cpu/library/onednn_common.h"
#include "compiler/codegen/cpu/library/parallel_gemm.h"
#include "compiler/codegen/cpu/library/scratch.h"

namespace loupe::library {

namespace {

using namespace onednn;
using dnnl::memory;

memory::data_type dataTypeOf(DType dtype) {
  return dtype == DType::BF16 ? memory::data_type::bf16 : memory::data_type::f32;
}

// The operand as oneDNN's kernels read it in place: every matrix row- or column-major, the
// batch (if any) outermost; anything else is packed.
Tensor readable(const Tensor& t) {
  size_t r = t.rank();
  const std::vector<int64_t>& s = t.strides();
  for (size_t d = 0; d < r; ++d)
    if (t.size(d) == 1 || s[d] <= 0) return t.contiguous(); // oneDNN wants every dim laid out
  int64_t rows = t.size(r - 2), cols = t.size(r - 1);
  bool rowMajor = s[r - 1] == 1 && s[r - 2] >= cols;
  bool columnMajor = s[r - 2] == 1 && s[r - 1] >= rows;
  bool batchOutermost = r == 2 || s[0] >= rows * cols;
  return (rowMajor || columnMajor) && batchOutermost ? t : t.contiguous();
}

memory::desc described(const Tensor& t) {
  return memory::desc(t.shape(), dataTypeOf(t.dtype()), t.strides());
}

// The bias as oneDNN broadcasts it: out's rank, size 1 where it broadcasts, packed.
memory::desc biasDesc(const Tensor& bias, size_t rank) {
  memory::dims dims(rank, 1);
  for (size_t k = 0; k < bias.rank(); ++k)
    dims[rank - bias.rank() + k] = bias.size(k);
  memory::dims strides(rank, 1);
  for (size_t d = rank - 1; d-- > 0;)
    strides[d] = strides[d + 1] * dims[d + 1];
  return memory::desc(dims, dataTypeOf(bias.dtype()), strides);
}

struct MatmulPlan {
  std::optional<dnnl::matmul> primitive; // absent: only the reference loop computes it
  memory::desc a, b, bias, out, scratchpad;
};

MatmulPlan makePlan(const Tensor& a, const Tensor& b, const Tensor* bias, const Tensor& out) {
  MatmulPlan plan{std::nullopt,   described(a),
                  described(b),   bias ? biasDesc(*bias, out.rank()) : memory::desc(),
                  described(out), memory::desc()};
  try {
    dnnl::matmul::desc desc(plan.a, plan.b, plan.bias, plan.out);
    dnnl::matmul::primitive_desc pd(desc, userScratchpad(), cpuEngine(), /*allow_empty=*/true);
    if (!pd || std::string(pd.impl_info_str()).starts_with("ref")) return plan;
    plan.primitive = dnnl::matmul(pd);
    plan.scratchpad = pd.scratchpad_desc();
  } catch (const dnnl::error&) { // layouts it does not take: computed through f32
    plan.primitive.reset();
  }
  return plan;
}

memory::dims planKey(const Tensor& a, const Tensor& b, const Tensor* bias, const Tensor& out) {
  memory::dims key = {gemmThreads(), bias ? static_cast<int64_t>(bias->rank()) : -1,
                      static_cast<int64_t>(out.dtype())};
  for (const Tensor* t : {&a, &b, &out}) {
    key.insert(key.end(), t->shape().begin(), t->shape().end());
    key.insert(key.end(), t->strides().begin(), t->strides().end());
  }
  if (bias) key.insert(key.end(), bias->shape().begin(), bias->shape().end());
  return key;
}

} // namespace

bool oneDnnHasMatmul(DType dtype) {
  auto has = [](memory::data_type type) {
    try {
      memory::desc a({16, 32}, type, memory::format_tag::ab);
      memory::desc b({32, 16}, type, memory::format_tag::ab);
      memory::desc out({16, 16}, type, memory::format_tag::ab);
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, out), cpuEngine(), true);
      return bool(pd) && !std::string(pd.impl_info_str()).starts_with("ref");
    } catch (const dnnl::error&) {
      return false;
    }
  };
  static const bool f32 = has(memory::data_type::f32), bf16 = has(memory::data_type::bf16);
  return dtype == DType::F32 ? f32 : dtype == DType::BF16 ? bf16 : false;
}

bool oneDnnMatmul(const Tensor& a, const Tensor& b, const Tensor* bias, Tensor& out) {
  if (a.numel() == 0 || b.numel() == 0 || out.numel() == 0) return false;
  DType dtype = out.dtype();
  if ((dtype != DType::F32 && dtype != DType::BF16) || a.dtype() != dtype || b.dtype() != dtype ||
      (bias && bias->dtype() != dtype))
    return false;
  Tensor lhs = readable(a), rhs = readable(b);
  Tensor packedBias = bias ? bias->contiguous() : Tensor();
  const Tensor* biasOperand = bias ? &packedBias : nullptr;
  static PlanCache<MatmulPlan> plans;
  std::shared_ptr<const MatmulPlan> plan = plans.get(
      planKey(lhs, rhs, biasOperand, out), [&] { return makePlan(lhs, rhs, biasOperand, out); });
  if (!plan->primitive) return false;
  ThreadScope threads(gemmThreads());
  Scratch<uint8_t> scratch(static_cast<int64_t>(plan->scratchpad.get_size()));
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, memory(plan->a, cpuEngine(), lhs.data())},
      {DNNL_ARG_WEIGHTS, memory(plan->b, cpuEngine(), rhs.data())},
      {DNNL_ARG_DST, memory(plan->out, cpuEngine(), out.data())},
      {DNNL_ARG_SCRATCHPAD, memory(plan->scratchpad, cpuEngine(), scratch.data())}};
  if (biasOperand) args[DNNL_ARG_BIAS] = memory(plan->bias, cpuEngine(), packedBias.data());
  dnnl::stream stream(cpuEngine());
  plan->primitive->execute(stream, args);
  stream.wait();
  return true;
}

} // namespace loupe::library
