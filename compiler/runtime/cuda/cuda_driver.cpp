#include "compiler/runtime/cuda/cuda_driver.h"

#include "compiler/runtime/cuda/cuda_driver_api.h"

#include <mutex>
#include <vector>

namespace loupe {
namespace {

using namespace cu;

CUdevice deviceHandle(int device) {
  CUdevice handle = 0;
  check(driver().cuDeviceGet(&handle, device), "cuDeviceGet", "device " + std::to_string(device));
  return handle;
}

int deviceAttribute(CUdevice handle, int attribute, const char* name) {
  int value = 0;
  check(driver().cuDeviceGetAttribute(&value, attribute, handle), "cuDeviceGetAttribute", name);
  return value;
}

// An attribute only profiling reads: 0 where the driver does not have it (a newer driver may drop
// the clock attributes) rather than an error that stops the graph running.
int optionalDeviceAttribute(CUdevice handle, int attribute) {
  int value = 0;
  return driver().cuDeviceGetAttribute(&value, attribute, handle) == CUDA_SUCCESS ? value : 0;
}

// The primary context of each device, retained on first use and kept (never released) for the
// process: torch keeps it alive too, and releasing it from a static destructor at exit would race
// the driver's own teardown.
CUcontext primaryContext(int device) {
  static std::mutex mutex;
  static auto* contexts = new std::vector<CUcontext>;
  std::lock_guard lock(mutex);
  if (device < 0) throw CudaError("no CUDA device " + std::to_string(device));
  if (static_cast<size_t>(device) >= contexts->size()) contexts->resize(device + 1, nullptr);
  CUcontext& context = (*contexts)[device];
  if (!context) {
    CUdevice handle = deviceHandle(device);
    check(driver().cuDevicePrimaryCtxRetain(&context, handle), "cuDevicePrimaryCtxRetain",
          "device " + std::to_string(device));
  }
  return context;
}

CUstream asStream(void* stream) {
  return static_cast<CUstream>(stream);
}

} // namespace

bool cudaDriverAvailable(std::string* why) {
  const DriverApi* api = loadedDriver(why);
  if (!api) return false;
  int count = 0;
  if (CUresult result = api->cuDeviceGetCount(&count); result != CUDA_SUCCESS || count < 1) {
    if (why)
      *why = result != CUDA_SUCCESS
                 ? "CUDA is not available: cuDeviceGetCount returned " + describeCudaResult(result)
                 : "CUDA is not available: the driver sees no device";
    return false;
  }
  return true;
}

CudaDeviceInfo cudaDeviceInfo(int device) {
  CUdevice handle = deviceHandle(device);
  CudaDeviceInfo info;
  info.index = device;
  char name[256] = {};
  check(driver().cuDeviceGetName(name, sizeof(name), handle), "cuDeviceGetName");
  info.name = name;
  info.computeMajor = deviceAttribute(handle, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                      "compute capability major");
  info.computeMinor = deviceAttribute(handle, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                      "compute capability minor");
  info.multiprocessors =
      deviceAttribute(handle, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "multiprocessor count");
  info.maxSharedPerBlockOptin = deviceAttribute(
      handle, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, "opt-in shared memory");
  info.clockKHz = optionalDeviceAttribute(handle, CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
  info.memoryClockKHz = optionalDeviceAttribute(handle, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
  info.memoryBusWidthBits =
      optionalDeviceAttribute(handle, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  size_t total = 0;
  check(driver().cuDeviceTotalMem(&total, handle), "cuDeviceTotalMem");
  info.totalMemory = static_cast<int64_t>(total);
  return info;
}

std::string cudaArch(int device) {
  CUdevice handle = deviceHandle(device);
  return "sm_" +
         std::to_string(deviceAttribute(handle, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                        "compute capability major")) +
         std::to_string(deviceAttribute(handle, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                        "compute capability minor"));
}

void cudaUseDevice(int device) {
  CUcontext wanted = primaryContext(device);
  CUcontext current = nullptr;
  check(driver().cuCtxGetCurrent(&current), "cuCtxGetCurrent");
  if (current != wanted)
    check(driver().cuCtxSetCurrent(wanted), "cuCtxSetCurrent", "device " + std::to_string(device));
}

CudaContextRestorer::CudaContextRestorer(bool cuda) {
  if (!cuda) return;
  const DriverApi* api = loadedDriver(nullptr);
  CUcontext current = nullptr;
  active_ = api && api->cuCtxGetCurrent(&current) == CUDA_SUCCESS;
  saved_ = current;
}

CudaContextRestorer::~CudaContextRestorer() {
  if (!active_) return;
  const DriverApi& api = driver();
  CUcontext current = nullptr;
  // A destructor cannot throw: a failure here leaves the context as Loupe's call left it.
  if (api.cuCtxGetCurrent(&current) == CUDA_SUCCESS && current != saved_)
    (void)api.cuCtxSetCurrent(static_cast<CUcontext>(saved_));
}

void cudaCheckParameter(void* function, size_t argBytes, const std::string& what) {
  // (Probing for a second parameter would be an API error for a one-parameter kernel, which
  // compute-sanitizer reports; the generator only emits one-parameter entries.)
  if (argBytes > kMaxKernelParameterBytes)
    throw CudaError("cannot launch " + what + ": its argument struct has " +
                    std::to_string(argBytes) + " bytes, more than a kernel parameter may (" +
                    std::to_string(kMaxKernelParameterBytes) + ")");
  if (!driver().cuFuncGetParamInfo) return;
  size_t offset = 0, size = 0;
  check(driver().cuFuncGetParamInfo(static_cast<CUfunction>(function), 0, &offset, &size),
        "cuFuncGetParamInfo", what);
  if (size != argBytes)
    throw CudaError("cannot launch " + what + ": the kernel takes a " + std::to_string(size) +
                    "-byte parameter, the launch passes one struct of " + std::to_string(argBytes) +
                    " bytes");
}

void cudaLaunch(void* function, const unsigned grid[3], const unsigned block[3],
                unsigned sharedBytes, void* stream, const void* args, size_t argBytes,
                DeferredText what) {
  if (argBytes > kMaxKernelParameterBytes) cudaCheckParameter(function, argBytes, what.str());
  // kernelParams holds one pointer per parameter; the driver copies the parameter's bytes.
  void* parameters[] = {const_cast<void*>(args)};
  CUresult result = driver().cuLaunchKernel(static_cast<CUfunction>(function), grid[0], grid[1],
                                            grid[2], block[0], block[1], block[2], sharedBytes,
                                            asStream(stream), parameters, nullptr);
  if (result != CUDA_SUCCESS) check(result, "cuLaunchKernel", what.str());
}

void cudaCopyAsync(void* dst, const void* src, size_t bytes, void* stream) {
  check(driver().cuMemcpyAsync(devicePointer(dst), devicePointer(src), bytes, asStream(stream)),
        "cuMemcpyAsync", std::to_string(bytes) + " bytes");
}

void cudaCopyRowsAsync(void* dst, size_t dstPitch, const void* src, size_t srcPitch,
                       size_t rowBytes, size_t rows, void* stream) {
  CUDA_MEMCPY2D copy;
  copy.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  copy.srcDevice = devicePointer(src);
  copy.srcPitch = srcPitch;
  copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  copy.dstDevice = devicePointer(dst);
  copy.dstPitch = dstPitch;
  copy.WidthInBytes = rowBytes;
  copy.Height = rows;
  check(driver().cuMemcpy2DAsync(&copy, asStream(stream)), "cuMemcpy2DAsync",
        std::to_string(rows) + " rows of " + std::to_string(rowBytes) + " bytes");
}

void cudaMemsetAsync(void* dst, unsigned char value, size_t bytes, void* stream) {
  check(driver().cuMemsetD8Async(devicePointer(dst), value, bytes, asStream(stream)),
        "cuMemsetD8Async", std::to_string(bytes) + " bytes");
}

void cudaFillWordsAsync(void* dst, unsigned wordBytes, uint32_t word, size_t count, void* stream) {
  std::string what = std::to_string(count) + " words of " + std::to_string(wordBytes) + " bytes";
  if (wordBytes == 1)
    check(driver().cuMemsetD8Async(devicePointer(dst), static_cast<unsigned char>(word), count,
                                   asStream(stream)),
          "cuMemsetD8Async", what);
  else if (wordBytes == 2)
    check(driver().cuMemsetD16Async(devicePointer(dst), static_cast<unsigned short>(word), count,
                                    asStream(stream)),
          "cuMemsetD16Async", what);
  else if (wordBytes == 4)
    check(driver().cuMemsetD32Async(devicePointer(dst), word, count, asStream(stream)),
          "cuMemsetD32Async", what);
  else
    throw Error("runtime", "a fill takes words of 1, 2 or 4 bytes, not " + what);
}

void cudaStreamSync(void* stream) {
  check(driver().cuStreamSynchronize(asStream(stream)), "cuStreamSynchronize");
}

bool cudaStreamCapturing(void* stream) {
  if (!driver().cuStreamIsCapturing) return false;
  int status = CU_STREAM_CAPTURE_STATUS_NONE;
  // An error is an answer too: the legacy default stream, asked while another stream captures
  // in global mode, is refused (an implicit dependency on the capture), so it counts as captured.
  return driver().cuStreamIsCapturing(asStream(stream), &status) != CUDA_SUCCESS ||
         status != CU_STREAM_CAPTURE_STATUS_NONE;
}

void cudaCheckAsyncErrors(void* stream, const std::string& what) {
  check(driver().cuStreamSynchronize(asStream(stream)), "cuStreamSynchronize",
        "work queued earlier by " + what);
}

} // namespace loupe
