// The part of cuBLASLt Loupe calls, declared here so that the build needs no CUDA header: opaque
// handles, the enum values used (copied from cublasLt.h, cublas_api.h and library_types.h of
// cuBLAS 13.0.2, the nvidia-cublas 13.0.2.14 wheel) and the entry points, resolved with dlsym
// when cuBLASLt is first used. Internal to compiler/runtime/cuda.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace loupe::lt {

using cublasStatus_t = int;
using cublasLtHandle_t = struct cublasLtContext*;
using cublasLtMatmulDesc_t = struct cublasLtMatmulDescOpaque*;
using cublasLtMatrixLayout_t = struct cublasLtMatrixLayoutOpaque*;
using cublasLtMatmulPreference_t = struct cublasLtMatmulPreferenceOpaque*;
using cudaStream_t = void*;

struct cublasLtMatmulAlgo_t {
  uint64_t data[8];
};

struct cublasLtMatmulHeuristicResult_t {
  cublasLtMatmulAlgo_t algo;
  size_t workspaceSize;
  cublasStatus_t state;
  float wavesCount;
  int reserved[4];
};

// cublas_api.h
inline constexpr cublasStatus_t CUBLAS_STATUS_SUCCESS = 0;
inline constexpr int32_t CUBLAS_OP_N = 0;
inline constexpr int32_t CUBLAS_OP_T = 1;
inline constexpr int CUBLAS_COMPUTE_32F = 68; // exact fp32 (not the _FAST_TF32 variant)
// library_types.h (cudaDataType)
inline constexpr int32_t CUDA_R_32F = 0;
inline constexpr int32_t CUDA_R_16F = 2;
inline constexpr int32_t CUDA_R_16BF = 14;
// cublasLt.h: cublasLtMatmulDescAttributes_t
inline constexpr int CUBLASLT_MATMUL_DESC_TRANSA = 3;                     // int32_t
inline constexpr int CUBLASLT_MATMUL_DESC_TRANSB = 4;                     // int32_t
inline constexpr int CUBLASLT_MATMUL_DESC_EPILOGUE = 7;                   // uint32_t
inline constexpr int CUBLASLT_MATMUL_DESC_BIAS_POINTER = 8;               // const void*
inline constexpr int CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER = 11;      // void* (const: DGELU)
inline constexpr int CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD = 12;           // int64_t
inline constexpr int CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE = 13; // int64_t
inline constexpr int CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE = 22;    // int32_t
inline constexpr int CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE = 26;            // int32_t
// cublasLtMatrixLayoutAttribute_t
inline constexpr int CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT = 5;          // int32_t
inline constexpr int CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET = 6; // int64_t
// cublasLtEpilogue_t
inline constexpr uint32_t CUBLASLT_EPILOGUE_DEFAULT = 1;
inline constexpr uint32_t CUBLASLT_EPILOGUE_RELU = 2;
inline constexpr uint32_t CUBLASLT_EPILOGUE_BIAS = 4;
inline constexpr uint32_t CUBLASLT_EPILOGUE_RELU_BIAS = 6;
inline constexpr uint32_t CUBLASLT_EPILOGUE_GELU = 32;
inline constexpr uint32_t CUBLASLT_EPILOGUE_GELU_AUX = 160; // GELU | 128
inline constexpr uint32_t CUBLASLT_EPILOGUE_GELU_BIAS = 36;
inline constexpr uint32_t CUBLASLT_EPILOGUE_GELU_AUX_BIAS = 164; // GELU_AUX | BIAS
inline constexpr uint32_t CUBLASLT_EPILOGUE_DGELU = 192;         // 64 | 128
// cublasLtMatmulPreferenceAttributes_t
inline constexpr int CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1;   // uint64_t
inline constexpr int CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES = 5; // uint32_t, then B, C, D
// cublasLtMatmulAlgoConfigAttributes_t
inline constexpr int CUBLASLT_ALGO_CONFIG_ID = 0;         // int32_t
inline constexpr int CUBLASLT_ALGO_CONFIG_TILE_ID = 1;    // uint32_t
inline constexpr int CUBLASLT_ALGO_CONFIG_SPLITK_NUM = 2; // int32_t
inline constexpr int CUBLASLT_ALGO_CONFIG_STAGES_ID = 6;  // uint32_t

// X(member, return type, parameters), the symbol being the member's name.
#define LOUPE_CUBLASLT_FUNCTIONS(X)                                                                \
  X(cublasLtCreate, cublasStatus_t, (cublasLtHandle_t*))                                           \
  X(cublasLtGetVersion, size_t, ())                                                                \
  X(cublasLtGetStatusName, const char*, (cublasStatus_t))                                          \
  X(cublasLtGetStatusString, const char*, (cublasStatus_t))                                        \
  X(cublasLtMatmulDescCreate, cublasStatus_t, (cublasLtMatmulDesc_t*, int, int32_t))               \
  X(cublasLtMatmulDescDestroy, cublasStatus_t, (cublasLtMatmulDesc_t))                             \
  X(cublasLtMatmulDescSetAttribute, cublasStatus_t,                                                \
    (cublasLtMatmulDesc_t, int, const void*, size_t))                                              \
  X(cublasLtMatrixLayoutCreate, cublasStatus_t,                                                    \
    (cublasLtMatrixLayout_t*, int32_t, uint64_t, uint64_t, int64_t))                               \
  X(cublasLtMatrixLayoutDestroy, cublasStatus_t, (cublasLtMatrixLayout_t))                         \
  X(cublasLtMatrixLayoutSetAttribute, cublasStatus_t,                                              \
    (cublasLtMatrixLayout_t, int, const void*, size_t))                                            \
  X(cublasLtMatmulPreferenceCreate, cublasStatus_t, (cublasLtMatmulPreference_t*))                 \
  X(cublasLtMatmulPreferenceDestroy, cublasStatus_t, (cublasLtMatmulPreference_t))                 \
  X(cublasLtMatmulPreferenceSetAttribute, cublasStatus_t,                                          \
    (cublasLtMatmulPreference_t, int, const void*, size_t))                                        \
  X(cublasLtMatmulAlgoGetHeuristic, cublasStatus_t,                                                \
    (cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,       \
     cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatmulPreference_t, int,              \
     cublasLtMatmulHeuristicResult_t*, int*))                                                      \
  X(cublasLtMatmulAlgoConfigGetAttribute, cublasStatus_t,                                          \
    (const cublasLtMatmulAlgo_t*, int, void*, size_t, size_t*))                                    \
  X(cublasLtMatmul, cublasStatus_t,                                                                \
    (cublasLtHandle_t, cublasLtMatmulDesc_t, const void*, const void*, cublasLtMatrixLayout_t,     \
     const void*, cublasLtMatrixLayout_t, const void*, const void*, cublasLtMatrixLayout_t, void*, \
     cublasLtMatrixLayout_t, const cublasLtMatmulAlgo_t*, void*, size_t, cudaStream_t))

struct CublasLtApi {
#define LOUPE_CUBLASLT_MEMBER(member, result, parameters) result(*member) parameters = nullptr;
  LOUPE_CUBLASLT_FUNCTIONS(LOUPE_CUBLASLT_MEMBER)
#undef LOUPE_CUBLASLT_MEMBER
};

// Where cuBLASLt is looked for, in order: $LOUPE_CUBLASLT (a full path), libcublasLt.so.13 by
// soname, /usr/local/cuda/lib64, then each folder of $LOUPE_CUDA_LIBRARY_PATH (colon-separated;
// the Python adapter sets it to torch's site-packages/nvidia/cu13/lib).
std::vector<std::string> cublasLtCandidates();

// cuBLASLt, loaded once per process on first use, or null with the reason in *why (the CUDA
// driver is missing, or each candidate tried). Never throws.
const CublasLtApi* loadedCublasLt(std::string* why);

// Throws a CudaError naming the call, what it was doing and the status unless it is success.
void check(cublasStatus_t status, const char* call, const std::string& what = {});

} // namespace loupe::lt
