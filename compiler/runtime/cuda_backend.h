// The CUDA device backend (device_backend.h): generated kernels built by NVRTC
// (compiler/codegen/cuda) and launched through the driver API, matmuls through cuBLASLt, and the
// executable's memory from the embedder's allocator (torch's caching allocator, handed over by
// the Python adapter) or, without one, the driver's. Every launch goes to the stream the
// embedder names for the run (torch's current stream). docs/cuda.md describes the whole path.
//
// One backend's kernels run on one stream at a time: the split reductions' counters in its
// workspace (cuda_kernel_abi.h) are zero between launches only if launches do not overlap.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/codegen/cuda/cuda_codegen.h"
#include "compiler/codegen/cuda/cuda_kernel_abi.h"
#include "compiler/codegen/cuda/nvrtc_compiler.h"
#include "compiler/runtime/cuda_fixed_kernels.h"
#include "compiler/runtime/device_backend.h"

namespace loupe {

struct CudaBackendOptions {
  int device = 0;
  // `bytes` of device memory on `device`, kept alive by the returned pointer. Null: the driver's
  // cuMemAlloc (programs without torch).
  std::function<std::shared_ptr<void>(size_t bytes)> allocate;
  // The stream a run launches on (a CUstream); null, or returning null: the default stream.
  std::function<void*()> stream;
  NvrtcOptions compiler; // its arch is the device's
};

// Whether CUDA can run here; when not, *why says what is missing (driver, NVRTC).
bool cudaBackendAvailable(std::string* why);

class CudaBackend : public DeviceBackend {
public:
  // Throws Error("cuda", ...) when the driver cannot load or the device does not exist.
  explicit CudaBackend(CudaBackendOptions options);
  ~CudaBackend() override;

  Device device() const override;
  Tensor allocate(DType dtype, const std::vector<int64_t>& shape) override;
  void copy(const Tensor& from, Tensor& to) override;
  Tensor toHost(const Tensor& tensor) override;
  void fromHost(const Tensor& host, Tensor& to) override;
  void beginRun() override;
  void addGeneratedKernel(const std::string& kernel, const Node& node,
                          const KernelChoice* choice) override;
  bool addLibraryKernel(const Node& node) override;
  std::map<std::string, KernelBuildRecord> buildKernels() override;
  void launch(size_t index, const KernelBinding& bound, const std::vector<const Tensor*>& inputs,
              const std::vector<Tensor*>& outputs) override;
  std::string describeLastLaunch(size_t index) const override;
  bool canTimeSteps() override;
  std::unique_ptr<StepTimer> makeStepTimer() override;
  DevicePeaks peaks() const override { return peaks_; }
  bool hasLibraryKernel(const Node& node, std::string* whyNot) const override;
  void runLibraryKernel(const Node& node, const AttrMap& boundAttrs,
                        const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs,
                        const Tensor& scratch) override;

  void* stream() const { return stream_; }

private:
  struct Kernel;
  Tensor contiguousCopy(const Tensor& tensor);
  void* reductionWorkspace(size_t bytes);

  CudaBackendOptions options_;
  int multiprocessors_ = 0;
  DevicePeaks peaks_;
  std::string arch_;
  void* stream_ = nullptr;
  std::vector<Kernel> kernels_;
  CudaFixedKernels* fixed_ = nullptr; // strided copy, row gather and scatter: the process's
  std::vector<size_t> fixedEntries_;  // their entries the graph's library kernels may launch
  Tensor workspace_;                  // cuBLASLt's, allocated on first use
  // The split reductions' workspace: allocated when a launch first needs one, grown
  // geometrically, its counters zeroed once on allocation (each launch leaves them zero). The
  // buffers it outgrew stay alive with the backend: a CUDA graph captured earlier may still
  // point at them.
  Tensor reductionWorkspace_;
  std::vector<Tensor> outgrownReductionWorkspaces_;
};

} // namespace loupe
