// Device memory owned by the runtime itself (cuMemAlloc in the primary context), for the places
// that do not borrow torch's allocator: the tests and programs that run without torch.
#pragma once

#include <cstddef>

namespace loupe {

class CudaDeviceMemory {
public:
  CudaDeviceMemory() = default;
  CudaDeviceMemory(size_t bytes, int device);
  ~CudaDeviceMemory();
  CudaDeviceMemory(CudaDeviceMemory&& other) noexcept;
  CudaDeviceMemory& operator=(CudaDeviceMemory&& other) noexcept;
  CudaDeviceMemory(const CudaDeviceMemory&) = delete;
  CudaDeviceMemory& operator=(const CudaDeviceMemory&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }

private:
  void release() noexcept;
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

} // namespace loupe
