// The calling convention between the runtime and a generated CUDA kernel, and the host side of
// a launch: which entry of the kernel suits the tensors at hand, its grid and block, and the
// parameter block (docs/cuda-codegen.md, "ABI").
//
// Every __global__ entry takes ONE by-value parameter, a struct of 8-byte words whose layout
// depends only on the iteration rank R, the operand count P (inputs, then outputs) and the
// symbolic scalar count S, all fixed when the kernel is generated:
//
//   int64_t sizes[max(R,1)];            // the iteration space (rank 0: {1})
//   int64_t data[P];                    // device pointers to element 0 of each operand
//   int64_t strides[P][max(R,1)];       // per operand, in elements, in the iteration space
//   int64_t scalars[max(S,1)];          // KernelSignature::scalars evaluated
//   int64_t workspace;                  // reduction kernels only: the split entry's workspace
//
// so sizes and symbolic attributes are run-time values: one kernel serves every binding.
//
// The workspace (device memory the caller owns, CudaLaunch::workspaceBytes of it; 0 unless the
// split entry runs) holds kSplitCounterSlots uint32 counters, one per block of outputs (a row,
// or a tile of neighbouring outputs when the innermost dim is kept: blockIdx.x), which are zero
// between launches (the caller zeroes them once, when it allocates the workspace; each launch
// leaves them zero), then from byte kSplitPartialsOffset the partial results: per accumulator,
// rows x splits slots of 8 bytes, row-major. Launches that share a workspace must be ordered
// (one stream): the counters of one launch are the next one's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/codegen/kernel_signature.h"
#include "compiler/ir/graph.h"
#include "compiler/ops/op_registry.h"
#include "compiler/tensor/tensor.h"

namespace loupe {

// What an entry of a generated kernel does; a kernel has one entry per variant it offers.
enum class CudaEntryRole {
  Pointwise,              // any strides: grid-stride loop over the linear index
  PointwiseNarrow,        // the strided entry in 32 bits: fewer than 2^31 elements, and every
                          // operand's elements within 2^31 of its first, no negative stride
  PointwiseVectorised,    // dense outputs, inputs dense or broadcast along whole rows, aligned
  ReductionRow,           // one warp or block per output; the reduced dims are the innermost
  ReductionRowVectorised, // the row entry with vector accesses: one innermost reduced dim,
                          // rows dense (or broadcast) and aligned in every operand walking them
  ReductionPerOutput,     // one thread per output looping over the reduced dims: any strides
  ReductionSplit,         // single-pass groups: grid.y splits each row's (or tile's) reduced
                          // range; the last block combines the splits' partials (the workspace)
};
const char* cudaEntryRoleName(CudaEntryRole role);

// The threads per block an entry is compiled for (__launch_bounds__): the planner never asks
// for more.
constexpr unsigned kCudaPointwiseBlock = 256;
constexpr unsigned kCudaRowBlock = 512;

// The split entry's workspace (see the top of this file): the counters, then the partials.
constexpr int64_t kSplitCounterSlots = 4096; // the planner splits no more rows than this
constexpr int64_t kSplitPartialsOffset = kSplitCounterSlots * 4;
// Rows shorter than this never split (planCudaLaunch says why); a kernel whose reduced extent is
// static and shorter gets no split entry.
constexpr int64_t kSplitMinimumRow = int64_t{1} << 17;
// With the innermost dim kept (CudaKernelLayout::splitColumns) the entry without a split gives
// each output ONE thread walking its whole reduced range, a load at a time: from this extent on
// the split entry takes every such reduction whose tiles fit the counters, with grid.y splits
// only where they fill the GPU (docs/cuda-codegen.md, "Variants"). A kernel whose static reduced
// extent is shorter gets no split entry.
constexpr int64_t kSplitColumnsMinimum = 128;

// The bit of pass `pass` in CudaKernelLayout::readInPasses (passes past the 64th share the
// last bit).
constexpr uint64_t passBit(int pass) {
  return uint64_t{1} << (pass < 63 ? pass : 63);
}

// Whether 32-bit index arithmetic serves a launch over `total` elements of `tensors`: fewer than
// 2^31 elements (a grid-stride index then stays below 2^32), and every tensor's elements within
// 2^31 of its first with no negative stride, so every offset into it is a non-negative int32.
// The narrow strided entry (planCudaLaunch) and the runtime's strided copy take it.
bool fitsNarrowIndex(int64_t total, const std::vector<const Tensor*>& tensors);

// What the host needs to plan a launch of a generated kernel.
struct CudaKernelLayout {
  KernelSignature signature;
  size_t numInputs = 0;
  std::vector<DType> dtypes; // per operand: inputs, then outputs
  // Per operand: read inside the reduction loop (a reduction's prologue inputs), so its
  // strides along the reduced dims matter; every operand of a pointwise kernel.
  std::vector<bool> walksReducedDims;
  bool reduction = false;
  size_t reductions = 0;           // reduction nodes (a row group has several)
  std::vector<size_t> reducedDims; // sorted
  int vectorWidth = 1;             // elements per vector access in the vectorised entries
  int passes = 1;                  // walks over each row (group_analysis.h)
  // Per input of a reduction: the passes whose walk over the row reads it (passBit). A
  // pass reads an input when a reduction it folds, or in the last pass a full-space output,
  // depends on it. 0 for the inputs of pointwise kernels.
  std::vector<uint64_t> readInPasses;
  // Per input: its elements differ from row to row (it is indexed by a kept dim of more than
  // one element). An input broadcast along the kept dims (layer norm's weight) is the same few
  // elements for every row: L1 has it after the first.
  std::vector<bool> differsByRow;
  // Per input: the vectorised row entry keeps its row in the row cache (CudaLaunch::sharedBytes):
  // inputs read in more than one pass that differ by row.
  std::vector<bool> rowCached;
  bool splitColumns = false; // the innermost dim is kept: the split entry takes tiles of outputs
  std::vector<CudaEntryRole> entries; // the roles of GeneratedCudaKernel::entries, in order
  // The parameter block's size in 8-byte words (a reduction's ends with the workspace word).
  size_t argWords() const;
};

// Throws Error("codegen", ...) when the node is not generated (see canGenerateCudaKernel).
CudaKernelLayout describeCudaKernel(const Node& node,
                                    const OpRegistry& registry = OpRegistry::global());

struct CudaLaunch {
  size_t entry = 0; // index into GeneratedCudaKernel::entries: the variant chosen for these tensors
  unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  // Dynamic shared memory: the vectorised row entry's row cache (a multi-pass row group whose
  // rows fit in kRowCacheMaxBytes: each cached input's row, 16-byte aligned, per row of the
  // block), else 0. The entry reads the size it was given to know whether it caches.
  unsigned sharedBytes = 0;
  std::vector<int64_t>
      args;             // the parameter block, to pass to cuLaunchKernel as the single parameter
  const char* why = ""; // one line: why this entry (a literal, so planning builds no text)
  // Device memory the launch needs as its workspace (the split entry's counters and partials),
  // bound with bindCudaWorkspace; 0: none.
  size_t workspaceBytes = 0;
};

// Chooses the entry (docs/cuda-codegen.md, "Variants"), the grid and block for a device of
// `multiprocessors` SMs, and packs the parameter block. The tensors hold device pointers: only
// their geometry and data() are used. Throws Error("runtime", ...) naming the operand when a
// size does not fit the iteration space.
CudaLaunch planCudaLaunch(const CudaKernelLayout& layout, const KernelBinding& bound,
                          const std::vector<const Tensor*>& inputs,
                          const std::vector<Tensor*>& outputs, int multiprocessors);

// Writes the workspace pointer into a planned launch's parameter block: `workspace` holds at
// least launch.workspaceBytes, its counters zero. A launch that needs none is left as it is.
void bindCudaWorkspace(CudaLaunch& launch, void* workspace);

} // namespace loupe
