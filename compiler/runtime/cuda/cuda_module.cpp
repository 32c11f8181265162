#include "compiler/runtime/cuda/cuda_module.h"

#include "compiler/runtime/cuda/cuda_driver.h"
#include "compiler/runtime/cuda/cuda_driver_api.h"

#include <utility>

namespace loupe {

using namespace cu;

CudaModule::CudaModule(const std::string& image, int device) : device_(device) {
  cudaUseDevice(device);
  CUmodule module = nullptr;
  // std::string keeps a terminating NUL, which PTX text needs; a cubin carries its own size.
  check(driver().cuModuleLoadData(&module, image.c_str()), "cuModuleLoadData",
        "a " + std::to_string(image.size()) + "-byte image on device " + std::to_string(device));
  module_ = module;
}

CudaModule::~CudaModule() {
  // At exit the driver may already be shut down (CUDA_ERROR_DEINITIALIZED): nothing to undo then.
  if (module_) driver().cuModuleUnload(static_cast<CUmodule>(module_));
}

CudaModule::CudaModule(CudaModule&& other) noexcept
    : module_(std::exchange(other.module_, nullptr)), device_(other.device_) {}

CudaModule& CudaModule::operator=(CudaModule&& other) noexcept {
  std::swap(module_, other.module_);
  std::swap(device_, other.device_);
  return *this;
}

void* CudaModule::function(const std::string& name) const {
  CUfunction function = nullptr;
  check(driver().cuModuleGetFunction(&function, static_cast<CUmodule>(module_), name.c_str()),
        "cuModuleGetFunction", "kernel " + name);
  return function;
}

CudaModule::Attributes CudaModule::attributes(const std::string& name) const {
  auto function = static_cast<CUfunction>(this->function(name));
  auto get = [&](int attribute) {
    int value = 0;
    check(driver().cuFuncGetAttribute(&value, attribute, function), "cuFuncGetAttribute",
          "kernel " + name);
    return value;
  };
  return {get(CU_FUNC_ATTRIBUTE_NUM_REGS), get(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES),
          get(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES), get(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)};
}

} // namespace loupe
