// cuBLASLt's matmul with Loupe's problems: the layout (cublaslt_layout.h), descriptors, the
// heuristic's first algorithm, cached per problem, and the call on the caller's stream.
#include "compiler/runtime/cuda/cublaslt_matmul.h"

#include "compiler/runtime/cuda/cublaslt_api.h"
#include "compiler/runtime/cuda/cublaslt_layout.h"
#include "compiler/runtime/cuda/cuda_driver.h"

#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace loupe {
namespace {

using namespace lt;

int32_t dataType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return CUDA_R_32F;
  case DType::BF16:
    return CUDA_R_16BF;
  case DType::F16:
    return CUDA_R_16F;
  default:
    return -1;
  }
}

uint32_t epilogueValue(MatmulEpilogue epilogue) {
  switch (epilogue) {
  case MatmulEpilogue::None:
    return CUBLASLT_EPILOGUE_DEFAULT;
  case MatmulEpilogue::Bias:
    return CUBLASLT_EPILOGUE_BIAS;
  case MatmulEpilogue::Relu:
    return CUBLASLT_EPILOGUE_RELU;
  case MatmulEpilogue::BiasRelu:
    return CUBLASLT_EPILOGUE_RELU_BIAS;
  case MatmulEpilogue::Gelu:
    return CUBLASLT_EPILOGUE_GELU;
  case MatmulEpilogue::BiasGelu:
    return CUBLASLT_EPILOGUE_GELU_BIAS;
  case MatmulEpilogue::GeluAux:
    return CUBLASLT_EPILOGUE_GELU_AUX;
  case MatmulEpilogue::BiasGeluAux:
    return CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
  case MatmulEpilogue::DGelu:
    return CUBLASLT_EPILOGUE_DGELU;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

std::string describe(const MatmulProblem& p) {
  return std::string(dtypeName(p.dtype)) + " matmul [batch " + std::to_string(p.batch) + ", m " +
         std::to_string(p.m) + ", n " + std::to_string(p.n) + ", k " + std::to_string(p.k) + "]";
}

// The largest power of two up to 256 dividing the address of every matrix of the batch: the
// heuristic then picks only algorithms whose vector loads that alignment allows.
uint32_t alignment(const void* pointer, int64_t batchStrideBytes) {
  uint64_t bits = reinterpret_cast<uintptr_t>(pointer) | uint64_t(batchStrideBytes);
  uint32_t aligned = 256;
  while (aligned > 1 && bits % aligned != 0)
    aligned /= 2;
  return aligned;
}

// Descriptors and the chosen algorithm of one problem. Destroying them is host-only work.
struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  std::string name;
  const CublasLtApi* api = nullptr;

  ~Plan() {
    for (cublasLtMatrixLayout_t layout : {a, b, c})
      if (layout) api->cublasLtMatrixLayoutDestroy(layout);
    if (desc) api->cublasLtMatmulDescDestroy(desc);
  }
};

template <typename T>
void setDesc(const CublasLtApi& api, cublasLtMatmulDesc_t desc, int attribute, const T& value) {
  // Set on every biased call (the bias pointer): the message is made only on failure.
  if (cublasStatus_t status =
          api.cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof(value));
      status != CUBLAS_STATUS_SUCCESS)
    check(status, "cublasLtMatmulDescSetAttribute", "attribute " + std::to_string(attribute));
}

cublasLtMatrixLayout_t matrixLayout(const CublasLtApi& api, int32_t type,
                                    const CublasLtMatrix& matrix, int64_t batch) {
  cublasLtMatrixLayout_t layout = nullptr;
  check(api.cublasLtMatrixLayoutCreate(&layout, type, matrix.rows, matrix.cols, matrix.ld),
        "cublasLtMatrixLayoutCreate");
  auto set = [&](int attribute, const auto& value) {
    check(api.cublasLtMatrixLayoutSetAttribute(layout, attribute, &value, sizeof(value)),
          "cublasLtMatrixLayoutSetAttribute", "attribute " + std::to_string(attribute));
  };
  if (batch > 1) {
    set(CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, int32_t(batch));
    set(CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, matrix.batchStride);
  }
  return layout;
}

std::string algorithmName(const CublasLtApi& api, const cublasLtMatmulAlgo_t& algo) {
  auto get = [&](int attribute, auto value) {
    size_t written = 0;
    check(
        api.cublasLtMatmulAlgoConfigGetAttribute(&algo, attribute, &value, sizeof(value), &written),
        "cublasLtMatmulAlgoConfigGetAttribute");
    return std::to_string(value);
  };
  return "cublasLt algo " + get(CUBLASLT_ALGO_CONFIG_ID, int32_t(0)) + ", tile id " +
         get(CUBLASLT_ALGO_CONFIG_TILE_ID, uint32_t(0)) + ", splitK " +
         get(CUBLASLT_ALGO_CONFIG_SPLITK_NUM, int32_t(0)) + ", stages id " +
         get(CUBLASLT_ALGO_CONFIG_STAGES_ID, uint32_t(0));
}

std::unique_ptr<Plan> makePlan(const CublasLtApi& api, cublasLtHandle_t handle,
                               const MatmulProblem& p, const CublasLtLayout& layout,
                               const uint32_t alignments[4], size_t workspaceBytes, void* aux) {
  auto plan = std::make_unique<Plan>();
  plan->api = &api;
  // Exact fp32 compute and scale for every dtype: no TF32, fp32 accumulation for bf16 and f16.
  check(api.cublasLtMatmulDescCreate(&plan->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F),
        "cublasLtMatmulDescCreate");
  setDesc(api, plan->desc, CUBLASLT_MATMUL_DESC_TRANSA,
          layout.a.transposed ? CUBLAS_OP_T : CUBLAS_OP_N);
  setDesc(api, plan->desc, CUBLASLT_MATMUL_DESC_TRANSB,
          layout.b.transposed ? CUBLAS_OP_T : CUBLAS_OP_N);
  setDesc(api, plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, epilogueValue(p.epilogue));
  if (hasBias(p.epilogue))
    setDesc(api, plan->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, dataType(p.biasDType));
  int32_t type = dataType(p.dtype);
  if (hasAux(p.epilogue)) {
    setDesc(api, plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, type);
    setDesc(api, plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, layout.aux.ld);
    if (p.batch > 1)
      setDesc(api, plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE,
              layout.aux.batchStride);
    // The heuristic reads the pointer's alignment (it dereferences nothing); each call sets the
    // pointer it runs with, whose alignment is part of the plan's key.
    setDesc(api, plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, aux);
  }
  plan->a = matrixLayout(api, type, layout.a, p.batch);
  plan->b = matrixLayout(api, type, layout.b, p.batch);
  plan->c = matrixLayout(api, type, layout.c, p.batch);

  cublasLtMatmulPreference_t preference = nullptr;
  check(api.cublasLtMatmulPreferenceCreate(&preference), "cublasLtMatmulPreferenceCreate");
  std::unique_ptr<std::remove_pointer_t<cublasLtMatmulPreference_t>,
                  cublasStatus_t (*)(cublasLtMatmulPreference_t)>
      owned(preference, api.cublasLtMatmulPreferenceDestroy);
  auto prefer = [&](int attribute, const auto& value) {
    check(api.cublasLtMatmulPreferenceSetAttribute(preference, attribute, &value, sizeof(value)),
          "cublasLtMatmulPreferenceSetAttribute", "attribute " + std::to_string(attribute));
  };
  prefer(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, uint64_t(workspaceBytes));
  for (int i = 0; i < 4; ++i)
    prefer(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES + i, alignments[i]);

  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  check(api.cublasLtMatmulAlgoGetHeuristic(handle, plan->desc, plan->a, plan->b, plan->c, plan->c,
                                           preference, 1, &result, &found),
        "cublasLtMatmulAlgoGetHeuristic", describe(p));
  if (found < 1)
    throw CudaError("cuBLASLt has no algorithm for the " + describe(p) + " with " +
                    std::to_string(workspaceBytes) + " bytes of workspace");
  plan->algo = result.algo;
  plan->name = algorithmName(api, result.algo);
  return plan;
}

// Handles per device and plans per problem, for the process. Runs are serialised: a plan's bias
// pointer is set on its shared descriptor just before the call that reads it.
struct CublasLtState {
  std::mutex mutex;
  std::map<int, cublasLtHandle_t> handles;
  std::map<std::vector<int64_t>, std::unique_ptr<Plan>> plans;
};

// A bound on the plans kept: shapes that change from call to call (dynamic sizes) would otherwise
// grow the cache without end. Past it the cache starts over.
constexpr size_t kMaxPlans = 1024;

CublasLtState& state() {
  // Never destroyed: handles are not released at exit, when the driver may be gone already.
  static auto* instance = new CublasLtState;
  return *instance;
}

} // namespace

bool hasBias(MatmulEpilogue epilogue) {
  return epilogue == MatmulEpilogue::Bias || epilogue == MatmulEpilogue::BiasRelu ||
         epilogue == MatmulEpilogue::BiasGelu || epilogue == MatmulEpilogue::BiasGeluAux;
}

bool hasAux(MatmulEpilogue epilogue) {
  return epilogue == MatmulEpilogue::GeluAux || epilogue == MatmulEpilogue::BiasGeluAux ||
         epilogue == MatmulEpilogue::DGelu;
}

bool cublasLtAvailable(std::string* why) {
  return loadedCublasLt(why) != nullptr;
}

std::string cublasLtCannotRun(const MatmulProblem& p) {
  if (dataType(p.dtype) < 0)
    return "cuBLASLt multiplies f32, bf16 and f16 here, not " + std::string(dtypeName(p.dtype));
  CublasLtLayout layout;
  if (std::string why = cublasLtLayout(p, &layout); !why.empty()) return why;
  if (hasBias(p.epilogue)) {
    if (p.biasDType != p.dtype)
      return "cuBLASLt adds a bias of the output's dtype " + std::string(dtypeName(p.dtype)) +
             ", not " + std::string(dtypeName(p.biasDType));
    if (!layout.transposedProduct)
      return "cuBLASLt adds a bias only to an output with unit column stride (C's strides are "
             "row " +
             std::to_string(p.cStrides[1]) + ", column " + std::to_string(p.cStrides[2]) + ")";
  }
  if (hasAux(p.epilogue) && (layout.aux.ld % 8 != 0 || layout.aux.batchStride % 8 != 0))
    return "cuBLASLt's auxiliary matrix needs a leading dimension and a batch stride that are "
           "multiples of 8 elements, not " +
           std::to_string(layout.aux.ld) + " and " + std::to_string(layout.aux.batchStride);
  return "";
}

std::string runCublasLtMatmul(const MatmulProblem& p, const void* a, const void* b, void* c,
                              const void* bias, void* stream, void* workspace,
                              size_t workspaceBytes, int device, void* aux) {
  if (std::string why = cublasLtCannotRun(p); !why.empty())
    throw CudaError("cuBLASLt cannot run the " + describe(p) + ": " + why);
  std::string why;
  const CublasLtApi* api = loadedCublasLt(&why);
  if (!api) throw CudaError(why);
  cudaUseDevice(device);
  CublasLtLayout layout;
  cublasLtLayout(p, &layout);
  // In a transposed product cuBLASLt's A is torch's B (cublaslt_layout.h).
  const void* first = layout.transposedProduct ? b : a;
  const void* second = layout.transposedProduct ? a : b;
  int64_t element = int64_t(dtypeSize(p.dtype));
  const uint32_t alignments[4] = {alignment(first, layout.a.batchStride * element),
                                  alignment(second, layout.b.batchStride * element),
                                  alignment(c, layout.c.batchStride * element),
                                  alignment(c, layout.c.batchStride * element)};
  bool withAux = hasAux(p.epilogue);
  if (withAux && !aux) throw CudaError("the " + describe(p) + " has no auxiliary matrix");
  uint32_t auxAlignment = withAux ? alignment(aux, layout.aux.batchStride * element) : 0;

  CublasLtState& cache = state();
  std::lock_guard lock(cache.mutex);
  cublasLtHandle_t& handle = cache.handles[device];
  if (!handle) check(api->cublasLtCreate(&handle), "cublasLtCreate");
  std::vector<int64_t> key = {device,
                              int64_t(p.dtype),
                              p.batch,
                              p.m,
                              p.n,
                              p.k,
                              int64_t(p.epilogue),
                              int64_t(p.biasDType),
                              int64_t(workspaceBytes)};
  for (const int64_t* strides : {p.aStrides, p.bStrides, p.cStrides})
    key.insert(key.end(), strides, strides + 3);
  key.insert(key.end(), alignments, alignments + 4);
  if (withAux) {
    key.insert(key.end(), p.auxStrides, p.auxStrides + 3);
    key.push_back(auxAlignment);
  }
  auto found = cache.plans.find(key);
  if (found == cache.plans.end()) {
    if (cache.plans.size() >= kMaxPlans) cache.plans.clear();
    found =
        cache.plans.emplace(key, makePlan(*api, handle, p, layout, alignments, workspaceBytes, aux))
            .first;
  }
  const Plan& plan = *found->second;
  if (hasBias(p.epilogue)) setDesc(*api, plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
  if (withAux) setDesc(*api, plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, aux);
  const float alpha = 1, beta = 0;
  if (cublasStatus_t status =
          api->cublasLtMatmul(handle, plan.desc, &alpha, first, plan.a, second, plan.b, &beta, c,
                              plan.c, c, plan.c, &plan.algo, workspace, workspaceBytes, stream);
      status != CUBLAS_STATUS_SUCCESS)
    check(status, "cublasLtMatmul", describe(p) + " (" + plan.name + ")");
  return plan.name;
}

} // namespace loupe
