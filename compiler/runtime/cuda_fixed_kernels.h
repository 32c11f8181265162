// The CUDA kernels that are not generated from a graph: the strided copy (a value copied between
// layouts: an output that is a strided view, aten.clone of a strided tensor) and the row gather
// (aten.embedding). Their source is fixed; one NVRTC build makes them all, on first use, cached
// on disk like the generated kernels.
#pragma once

#include <memory>

#include "compiler/codegen/cuda/nvrtc_compiler.h"
#include "compiler/tensor/tensor.h"

namespace loupe {

class CudaFixedKernels {
public:
  // Kernels for `device` (whose primary context is current when they run), compiled with
  // `options` (its arch the device's); `multiprocessors` sizes the grids.
  CudaFixedKernels(NvrtcOptions options, int device, int multiprocessors);
  ~CudaFixedKernels();

  // to = from: one shape and dtype, any strides, rank at most kMaxRank, on `stream`.
  static constexpr size_t kMaxRank = 8;
  void copy(const Tensor& from, Tensor& to, void* stream);

  // out[i, :] = table[indices[i], :] on `stream`: `table` is [rows, width] with a unit column
  // stride, `indices` contiguous int64 or int32 of any shape, `out` contiguous
  // [indices.numel(), width] (aten.embedding's result, reshaped). Moves the widest unit (up to
  // 16 bytes) that the row sizes and addresses allow. An index outside [0, rows) stops the
  // kernel with a trap, as torch's device-side assert does: the CUDA context is then unusable.
  void gatherRows(const Tensor& table, const Tensor& indices, Tensor& out, void* stream);

private:
  struct Module;
  Module& module();

  NvrtcOptions options_;
  int device_;
  int multiprocessors_;
  std::unique_ptr<Module> module_;
};

} // namespace loupe
