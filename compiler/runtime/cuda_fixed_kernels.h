// The CUDA kernels that are not generated from a graph: the strided copy (a value copied between
// layouts: an output that is a strided view, aten.clone of a strided tensor), the row gather
// (aten.embedding) and the scatter (aten.index_put). Their source is fixed. Each entry (one
// element size of the copy, one unit of the gather, one dtype of the scatter) is an NVRTC program
// of its own, cached on disk like the generated kernels, built at most once per process and
// device: a graph whose plan runs one of these kernels builds the entries it may launch in the
// background beside its own kernels (CudaBackend::buildKernels), so no call waits for them; an
// entry first needed elsewhere (a copy the runtime makes for a strided output) is built then.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "compiler/codegen/cuda/nvrtc_compiler.h"
#include "compiler/tensor/tensor.h"

namespace loupe {

class CudaModule;

// The program of entry `entry` (below kEntryCount), as an NVRTC build takes it.
GeneratedCudaKernel cudaFixedKernelSource(size_t entry);

class CudaFixedKernels {
public:
  // Kernels for `device` (whose primary context is current when they run), compiled with
  // `options` (its arch the device's); `multiprocessors` sizes the grids.
  CudaFixedKernels(NvrtcOptions options, int device, int multiprocessors);
  ~CudaFixedKernels();

  // The process's kernels for `device`, made by the first caller (with its options) and kept
  // for the life of the process.
  static CudaFixedKernels& forDevice(const NvrtcOptions& options, int device, int multiprocessors);

  // The entries, numbered 0 to kEntryCount - 1: the copy of elements of `dtype`; the gathers
  // of a table of `dtype` (each launch takes the widest unit its sizes and addresses allow); the
  // scatter that writes, or adds, `dtype` over an indexed shape of rank `rank` with
  // `indexCount` index tensors (none: no atomic add in that dtype, or past kMaxRank). The
  // scatter's loops unroll to its rank and index count, so each pair is an entry of its own.
  static constexpr size_t kMaxRank = 8;
  static constexpr size_t kEntryCount = 4 + 5 + 8 * (kMaxRank + 1) * (kMaxRank + 1);
  static size_t copyEntry(DType dtype);
  static std::vector<size_t> gatherEntries(DType dtype);
  static std::optional<size_t> scatterEntry(DType dtype, bool accumulate, size_t rank,
                                            size_t indexCount);

  // Builds `entries` (concurrently), or loads them from the kernel cache, unless that is done.
  // A failure is not thrown here: the first use builds again and reports it. Safe from any
  // thread.
  void prepare(const std::vector<size_t>& entries);

  // to = from: one shape and dtype, any strides, rank at most kMaxRank, on `stream`.
  void copy(const Tensor& from, Tensor& to, void* stream);

  // out[i, :] = table[indices[i], :] on `stream`: `table` is [rows, width] with a unit column
  // stride, `indices` contiguous int64 or int32 of any shape, `out` contiguous
  // [indices.numel(), width] (aten.embedding's result, reshaped). Moves the widest unit (up to
  // 16 bytes) that the row sizes and addresses allow. An index outside [0, rows) stops the
  // kernel with a trap, as torch's device-side assert does: the CUDA context is then unusable.
  void gatherRows(const Tensor& table, const Tensor& indices, Tensor& out, void* stream);

  // aten.index_put's writes into `out`, which already holds self: values (broadcast to the
  // indexed shape) added (`accumulate`, with atomics: repeated indices add in no fixed order)
  // or written (the last of repeated indices is any one of them) at out[indices...].
  // `indices`: one slot per leading dim of out, null for none, int64 or int32, any strides.
  // Indexed shapes up to rank kMaxRank. A negative index counts from the end; one outside its
  // dim stops the kernel with a trap, as torch's device-side assert does.
  void scatter(const std::vector<const Tensor*>& indices, const Tensor& values, bool accumulate,
               Tensor& out, void* stream);

private:
  void load(const std::vector<size_t>& entries); // builds what is missing, under mutex_
  void* function(size_t entry);                  // built on first need

  NvrtcOptions options_;
  int device_;
  int multiprocessors_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<CudaModule>> modules_; // one per built entry, under mutex_
  // Each entry's function once built: what a launch reads without a lock.
  std::array<std::atomic<void*>, kEntryCount> functions_{};
};

} // namespace loupe
