// A loaded GPU binary (a cubin, or PTX that the driver compiles for the device) and its kernels by
// name. It is loaded into the device's primary context, the one torch uses.
#pragma once

#include <string>

namespace loupe {

class CudaModule {
public:
  // Makes the device's primary context current (cudaUseDevice) and loads `image` into it.
  CudaModule(const std::string& image, int device);
  // Unloads the module. Work queued with its kernels must have finished (synchronise first). At
  // process exit the driver may already be shut down; the unload's error is then ignored.
  ~CudaModule();
  CudaModule(CudaModule&& other) noexcept;
  CudaModule& operator=(CudaModule&& other) noexcept;
  CudaModule(const CudaModule&) = delete;
  CudaModule& operator=(const CudaModule&) = delete;

  int device() const { return device_; }

  // The kernel's CUfunction; throws naming the entry when the module has no such kernel.
  void* function(const std::string& name) const;

  struct Attributes {
    int registers = 0;         // per thread
    int staticSharedBytes = 0; // per block
    int localBytes = 0;        // per thread (spills and local arrays)
    int maxThreadsPerBlock = 0;
  };
  Attributes attributes(const std::string& name) const;

private:
  void* module_ = nullptr; // CUmodule
  int device_ = 0;
};

} // namespace loupe
