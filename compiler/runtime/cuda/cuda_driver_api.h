// The part of the CUDA driver API (libcuda) Loupe calls, declared here rather than taken from
// cuda.h so that the build needs no CUDA header: opaque handles, CUresult as int, the enum values
// used (copied from CUDA 13.0's cuda.h, CUDA_VERSION 13000) and the entry points, resolved with
// dlsym when the driver is first used. Internal to compiler/runtime/cuda.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace loupe::cu {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;

// cuda.h, CUDA 13.0.
inline constexpr CUresult CUDA_SUCCESS = 0;
inline constexpr CUresult CUDA_ERROR_INVALID_VALUE = 1;
inline constexpr CUresult CUDA_ERROR_NOT_READY = 600;
inline constexpr int CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13;
inline constexpr int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
inline constexpr int CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE = 36;
inline constexpr int CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH = 37;
inline constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
inline constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
inline constexpr int CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97;
inline constexpr int CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0;
inline constexpr int CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1;
inline constexpr int CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3;
inline constexpr int CU_FUNC_ATTRIBUTE_NUM_REGS = 4;
inline constexpr unsigned CU_EVENT_DEFAULT = 0;
inline constexpr int CU_STREAM_CAPTURE_STATUS_NONE = 0;
inline constexpr int CU_MEMORYTYPE_DEVICE = 2;

// cuda.h's CUDA_MEMCPY2D (CUDA_MEMCPY2D_v2), field for field; arrays are not used here.
struct CUDA_MEMCPY2D {
  size_t srcXInBytes = 0, srcY = 0;
  int srcMemoryType = 0;
  const void* srcHost = nullptr;
  CUdeviceptr srcDevice = 0;
  void* srcArray = nullptr;
  size_t srcPitch = 0;
  size_t dstXInBytes = 0, dstY = 0;
  int dstMemoryType = 0;
  void* dstHost = nullptr;
  CUdeviceptr dstDevice = 0;
  void* dstArray = nullptr;
  size_t dstPitch = 0;
  size_t WidthInBytes = 0, Height = 0;
};

// The entry points: X(member, parameters, symbol, older symbol or nullptr, required). cuda.h
// maps some names to versioned symbols (cuMemAlloc -> cuMemAlloc_v2); the symbol is that one.
// cuEventElapsedTime_v2 is new in CUDA 12.8 drivers: older ones have the unversioned symbol with
// the same signature. cuFuncGetParamInfo (12.4) only checks launches, so a driver without it
// still runs; so does one without cuStreamIsCapturing (11.0), which only profiling asks.
#define LOUPE_CUDA_DRIVER_FUNCTIONS(X)                                                             \
  X(cuInit, (unsigned), "cuInit", nullptr, true)                                                   \
  X(cuGetErrorName, (CUresult, const char**), "cuGetErrorName", nullptr, true)                     \
  X(cuGetErrorString, (CUresult, const char**), "cuGetErrorString", nullptr, true)                 \
  X(cuDriverGetVersion, (int*), "cuDriverGetVersion", nullptr, true)                               \
  X(cuDeviceGetCount, (int*), "cuDeviceGetCount", nullptr, true)                                   \
  X(cuDeviceGet, (CUdevice*, int), "cuDeviceGet", nullptr, true)                                   \
  X(cuDeviceGetName, (char*, int, CUdevice), "cuDeviceGetName", nullptr, true)                     \
  X(cuDeviceGetAttribute, (int*, int, CUdevice), "cuDeviceGetAttribute", nullptr, true)            \
  X(cuDeviceTotalMem, (size_t*, CUdevice), "cuDeviceTotalMem_v2", nullptr, true)                   \
  X(cuDevicePrimaryCtxRetain, (CUcontext*, CUdevice), "cuDevicePrimaryCtxRetain", nullptr, true)   \
  X(cuCtxGetCurrent, (CUcontext*), "cuCtxGetCurrent", nullptr, true)                               \
  X(cuCtxSetCurrent, (CUcontext), "cuCtxSetCurrent", nullptr, true)                                \
  X(cuModuleLoadData, (CUmodule*, const void*), "cuModuleLoadData", nullptr, true)                 \
  X(cuModuleUnload, (CUmodule), "cuModuleUnload", nullptr, true)                                   \
  X(cuModuleGetFunction, (CUfunction*, CUmodule, const char*), "cuModuleGetFunction", nullptr,     \
    true)                                                                                          \
  X(cuFuncGetAttribute, (int*, int, CUfunction), "cuFuncGetAttribute", nullptr, true)              \
  X(cuFuncGetParamInfo, (CUfunction, size_t, size_t*, size_t*), "cuFuncGetParamInfo", nullptr,     \
    false)                                                                                         \
  X(cuLaunchKernel,                                                                                \
    (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,   \
     void**, void**),                                                                              \
    "cuLaunchKernel", nullptr, true)                                                               \
  X(cuMemAlloc, (CUdeviceptr*, size_t), "cuMemAlloc_v2", nullptr, true)                            \
  X(cuMemFree, (CUdeviceptr), "cuMemFree_v2", nullptr, true)                                       \
  X(cuMemcpyAsync, (CUdeviceptr, CUdeviceptr, size_t, CUstream), "cuMemcpyAsync", nullptr, true)   \
  X(cuMemcpy2DAsync, (const CUDA_MEMCPY2D*, CUstream), "cuMemcpy2DAsync_v2", nullptr, true)        \
  X(cuMemsetD8Async, (CUdeviceptr, unsigned char, size_t, CUstream), "cuMemsetD8Async", nullptr,   \
    true)                                                                                          \
  X(cuMemsetD16Async, (CUdeviceptr, unsigned short, size_t, CUstream), "cuMemsetD16Async",         \
    nullptr, true)                                                                                 \
  X(cuMemsetD32Async, (CUdeviceptr, unsigned, size_t, CUstream), "cuMemsetD32Async", nullptr,      \
    true)                                                                                          \
  X(cuStreamSynchronize, (CUstream), "cuStreamSynchronize", nullptr, true)                         \
  X(cuStreamIsCapturing, (CUstream, int*), "cuStreamIsCapturing", nullptr, false)                  \
  X(cuEventCreate, (CUevent*, unsigned), "cuEventCreate", nullptr, true)                           \
  X(cuEventRecord, (CUevent, CUstream), "cuEventRecord", nullptr, true)                            \
  X(cuEventSynchronize, (CUevent), "cuEventSynchronize", nullptr, true)                            \
  X(cuEventElapsedTime, (float*, CUevent, CUevent), "cuEventElapsedTime_v2", "cuEventElapsedTime", \
    true)                                                                                          \
  X(cuEventDestroy, (CUevent), "cuEventDestroy_v2", nullptr, true)

struct DriverApi {
#define LOUPE_CUDA_DRIVER_MEMBER(member, parameters, symbol, olderSymbol, required)                \
  CUresult(*member) parameters = nullptr;
  LOUPE_CUDA_DRIVER_FUNCTIONS(LOUPE_CUDA_DRIVER_MEMBER)
#undef LOUPE_CUDA_DRIVER_MEMBER
};

// The driver, loaded and initialised (cuInit(0)) once per process on first use, or null with the
// reason in *why (which libraries were tried, or what cuInit returned). Never throws.
const DriverApi* loadedDriver(std::string* why);

// The driver; throws a CudaError with loadedDriver's reason when there is none.
const DriverApi& driver();

// Throws cudaCallError(result, call, what) unless result is CUDA_SUCCESS.
void check(CUresult result, std::string_view call, std::string_view what = {});

inline CUdeviceptr devicePointer(const void* pointer) {
  return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(pointer));
}

} // namespace loupe::cu
