// The GPU as the runtime sees it, through the CUDA driver API loaded at run time (no CUDA header
// or library is needed to build): devices, the primary context shared with torch, launches of
// generated kernels, copies and stream synchronisation. Every failure is a CudaError
// (cuda_error.h); docs/cuda-runtime.md describes the whole layer. This header also brings the
// layer's other pieces: modules, device memory and the event timer.
#pragma once

#include "compiler/runtime/cuda/cuda_device_memory.h"
#include "compiler/runtime/cuda/cuda_error.h"
#include "compiler/runtime/cuda/cuda_event_timer.h"
#include "compiler/runtime/cuda/cuda_module.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

namespace loupe {

// Whether libcuda loads, cuInit(0) succeeds and there is at least one device; when not, *why
// (if given) says which libraries were tried or what the driver answered.
bool cudaDriverAvailable(std::string* why);

struct CudaDeviceInfo {
  int index = 0;
  std::string name;
  int computeMajor = 0, computeMinor = 0; // 9, 0 on an H100
  int multiprocessors = 0;
  int64_t totalMemory = 0;        // bytes
  int maxSharedPerBlockOptin = 0; // bytes a block may use after opting in
  // For profiling's peaks (compiler/runtime/device_peaks.h); 0 where the driver does not say.
  int clockKHz = 0;       // the SMs' peak clock
  int memoryClockKHz = 0; // the memory's peak clock
  int memoryBusWidthBits = 0;
};
CudaDeviceInfo cudaDeviceInfo(int device);

// The virtual architecture the device runs natively: "sm_90" on an H100.
std::string cudaArch(int device);

// Makes the device's primary context current on this thread (cuDevicePrimaryCtxRetain +
// cuCtxSetCurrent). It is the context torch uses, so pointers from torch's allocator and torch's
// streams are valid in it. The context is retained once per process and never released (torch
// holds it too); a call when it is already current only compares two pointers.
void cudaUseDevice(int device);

// Puts back, when it goes out of scope, the context that was current on this thread when it was
// made (or none). An embedder's current device (torch.cuda.current_device()) is the context
// current on its thread, and Loupe makes its own device's context current to work: an embedder
// wraps each call into Loupe in one of these, so a graph on cuda:1 does not move the caller's
// tensors made with device="cuda" there. Does nothing where no driver loads, nor when `cuda` is
// false (a CPU graph's calls: the driver is not even loaded for them).
class CudaContextRestorer {
public:
  explicit CudaContextRestorer(bool cuda);
  ~CudaContextRestorer();
  CudaContextRestorer(const CudaContextRestorer&) = delete;
  CudaContextRestorer& operator=(const CudaContextRestorer&) = delete;

private:
  void* saved_ = nullptr; // a CUcontext
  bool active_ = false;
};

// The largest by-value parameter a kernel takes (32764 bytes on Volta and later, CUDA 12.1+).
inline constexpr size_t kMaxKernelParameterBytes = 32764;

// Text for an error message, made only when the error happens: a launch (many per call of a
// graph, each a few microseconds) formats no string. Holds a reference to `make`, so it lives
// for the full expression that passes it, as an argument does.
class DeferredText {
public:
  DeferredText(const char* text)
      : context_(text),
        make_([](const void* c) { return std::string(static_cast<const char*>(c)); }) {}
  template <typename Make>
  requires std::is_invocable_r_v<std::string, const Make&> DeferredText(const Make& make)
      : context_(&make),
        make_([](const void* c) -> std::string { return (*static_cast<const Make*>(c))(); }) {}
  std::string str() const { return make_(context_); }

private:
  const void* context_;
  std::string (*make_)(const void*);
};

// Refuses `function` (a CudaModule's CUfunction) unless it takes exactly one parameter of
// `argBytes` bytes, when the driver reports the kernel's parameters (CUDA 12.4+): the driver
// would otherwise copy the kernel's parameter size from the launch's struct, reading past a
// smaller one. Called once per kernel when it is loaded, not per launch.
void cudaCheckParameter(void* function, size_t argBytes, const std::string& what);

// Launches `function` (a CudaModule's CUfunction, checked with cudaCheckParameter for this
// `argBytes`) whose one parameter is a by-value struct of `argBytes` bytes at `args` (the
// generated kernels take a struct of 8-byte words). The driver copies the struct at launch, so
// `args` may be reused as soon as this returns. On failure the error names `what` (e.g. "kernel
// k3 (loupe_k3_vec), grid [4, 1, 1], block [256, 1, 1]"). The primary context of the kernel's
// device must be current on this thread (cudaUseDevice).
void cudaLaunch(void* function, const unsigned grid[3], const unsigned block[3],
                unsigned sharedBytes, void* stream, const void* args, size_t argBytes,
                DeferredText what);

// Stream-ordered copies and fills on `stream` (a CUstream / cudaStream_t; null is the legacy
// default stream). Pointers may be host or device memory in any direction: unified addressing
// tells them apart. A copy from pageable host memory returns once the source has been read.
void cudaCopyAsync(void* dst, const void* src, size_t bytes, void* stream);
void cudaMemsetAsync(void* dst, unsigned char value, size_t bytes, void* stream);
// `count` words of 1, 2 or 4 bytes (`wordBytes`), each `word` (its low bytes).
void cudaFillWordsAsync(void* dst, unsigned wordBytes, uint32_t word, size_t count, void* stream);
// `rows` rows of `rowBytes` bytes, device to device, from rows `srcPitch` bytes apart to rows
// `dstPitch` bytes apart.
void cudaCopyRowsAsync(void* dst, size_t dstPitch, const void* src, size_t srcPitch,
                       size_t rowBytes, size_t rows, void* stream);

void cudaStreamSync(void* stream);

// Whether work queued on `stream` is being captured into a CUDA graph, or may not be waited for
// because another stream is (then nothing may wait for it); false where the driver has no
// capture query (before CUDA 11).
bool cudaStreamCapturing(void* stream);

// Waits for the work queued on `stream` and turns an error it left (a fault in an earlier
// kernel, reported asynchronously) into a CudaError naming `what` ("the run of graph @g").
void cudaCheckAsyncErrors(void* stream, const std::string& what);

} // namespace loupe
