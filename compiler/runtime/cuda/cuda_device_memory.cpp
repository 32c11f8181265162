#include "compiler/runtime/cuda/cuda_device_memory.h"

#include "compiler/runtime/cuda/cuda_driver.h"
#include "compiler/runtime/cuda/cuda_driver_api.h"

#include <utility>

namespace loupe {

using namespace cu;

CudaDeviceMemory::CudaDeviceMemory(size_t bytes, int device) : bytes_(bytes) {
  cudaUseDevice(device);
  CUdeviceptr pointer = 0;
  check(driver().cuMemAlloc(&pointer, bytes), "cuMemAlloc",
        std::to_string(bytes) + " bytes on device " + std::to_string(device));
  data_ = reinterpret_cast<void*>(static_cast<uintptr_t>(pointer));
}

CudaDeviceMemory::~CudaDeviceMemory() {
  release();
}

CudaDeviceMemory::CudaDeviceMemory(CudaDeviceMemory&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

CudaDeviceMemory& CudaDeviceMemory::operator=(CudaDeviceMemory&& other) noexcept {
  std::swap(data_, other.data_);
  std::swap(bytes_, other.bytes_);
  return *this;
}

void CudaDeviceMemory::release() noexcept {
  // Unified addressing finds the allocation's context from the pointer. An error (the driver shut
  // down at exit) leaves nothing to free.
  if (data_) driver().cuMemFree(devicePointer(data_));
  data_ = nullptr;
}

} // namespace loupe
