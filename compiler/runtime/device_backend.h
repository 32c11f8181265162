// A device the executable runs a graph on other than the host: what touches its memory and runs
// its kernels. The executable keeps everything that does not depend on the device (steps, slots,
// the memory plan and its layout per binding, views, outputs, stats, check mode's comparison);
// a backend supplies the rest. The host needs none: it is the executable's built-in path.
//
// A step on a device runs as the plan chose: a generated kernel (the backend's code generator),
// a library kernel (the backend's, e.g. cuBLASLt), a view (no kernel), or the embedder's
// fallback (the op's aten kernel, on the same device). What the plan leaves to a reference
// implementation runs on the host on copies (hostReference), which only constants and ops with
// no aten kernel need.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/codegen/kernel_signature.h"
#include "compiler/ir/graph.h"
#include "compiler/ir/type.h"
#include "compiler/pass/plan.h"
#include "compiler/runtime/device_peaks.h"
#include "compiler/tensor/tensor.h"

namespace loupe {

// How one generated kernel was built: from the kernel cache or now, how long it took, and what
// the device compiler reported (registers, shared memory, spills) or, on the host, the
// instruction set it was compiled for, for the trace.
struct KernelBuildRecord {
  bool fromCache = false;
  double buildMs = 0;
  std::string resources; // on the host: the instruction set (cpu_isa.h)
};

// Times one step of a profiled run on the device (ExecutableOptions::profile): start() and stop()
// around the step, in the run's stream order, cost no wait; milliseconds(), asked once the run's
// steps are all queued, waits for the stop (the first one asked waits for the run).
class StepTimer {
public:
  virtual ~StepTimer() = default;
  virtual void start() = 0;
  virtual void stop() = 0;
  virtual double milliseconds() = 0;
};

class DeviceBackend {
public:
  virtual ~DeviceBackend() = default;
  virtual Device device() const = 0;

  // Memory the executable holds (the arena, outputs, copies): contiguous, on the device.
  virtual Tensor allocate(DType dtype, const std::vector<int64_t>& shape) = 0;
  // to = from: same shape and dtype, any strides, both on the device, in stream order.
  virtual void copy(const Tensor& from, Tensor& to) = 0;
  // A host copy of a device tensor, once the work queued before it has finished; and back.
  virtual Tensor toHost(const Tensor& tensor) = 0;
  virtual void fromHost(const Tensor& host, Tensor& to) = 0;

  // Before a run's first step: makes the device current and takes the embedder's stream.
  virtual void beginRun() = 0;

  // Generated kernels, registered in step order before build(); launch(index, ...) runs the
  // index-th. `choice` is the plan's (its source is what the trace shows), or null.
  virtual void addGeneratedKernel(const std::string& kernel, const Node& node,
                                  const KernelChoice* choice) = 0;
  // A library kernel the plan runs (hasLibraryKernel said yes), registered like the generated
  // ones: true when buildKernels() prepares something for it, so that its first run does not
  // wait (the CUDA row gather's NVRTC build).
  virtual bool addLibraryKernel(const Node&) { return false; }
  // Builds them all; may run on another thread than the rest. By kernel name.
  virtual std::map<std::string, KernelBuildRecord> buildKernels() = 0;
  virtual void launch(size_t index, const KernelBinding& bound,
                      const std::vector<const Tensor*>& inputs,
                      const std::vector<Tensor*>& outputs) = 0;
  // How the index-th kernel's last launch went (the entry, grid and block), for the trace;
  // asked on timed calls only, so it may build text.
  virtual std::string describeLastLaunch(size_t) const { return {}; }

  // Profiling. Whether the run begun last (beginRun) can have its steps timed on the device: not
  // without device timing, nor while its stream is captured into a CUDA graph (nothing may wait
  // for it); such a call is not profiled. When it can, makeStepTimer() gives a timer for a step
  // (one per step, kept and reused by later profiled calls).
  virtual bool canTimeSteps() { return false; }
  virtual std::unique_ptr<StepTimer> makeStepTimer() { return nullptr; }
  // The device's peak bandwidth and FLOP/s, for the share of them a kernel reached.
  virtual DevicePeaks peaks() const { return {}; }

  // Library kernels (matmul): whether the backend has one for this node, and running it.
  // `scratch` is the working memory the plan gave its kernel (KernelChoice::scratchBytes: bytes
  // of the arena, valid for this step only), or undefined where the plan gave none (an
  // executable built without a plan): the kernel then allocates what it needs.
  virtual bool hasLibraryKernel(const Node& node, std::string* whyNot) const = 0;
  virtual void runLibraryKernel(const Node& node, const AttrMap& boundAttrs,
                                const std::vector<const Tensor*>& inputs,
                                std::vector<Tensor>& outputs, const Tensor& scratch) = 0;
};

} // namespace loupe
