// Hand-written CPU kernels, most backed by BLAS: aten.mm and aten.bmm as one gemm per matrix,
// 2-D aten.convolution and its backward through oneDNN in f32 where the build has it
// (library/onednn_convolution.h), else as im2col and gemms (library/im2col_convolution.h);
// scaled dot-product attention and its backward as blocked gemms per (batch, head)
// (library/attention.h); the batch norm forms' forward, the batch and layer norm backward
// (library/normalization.h), embedding and its weight gradient (library/embedding.h) and 2-D max
// pooling and its backward (library/max_pool.h) in the input's precision; aten.clone and aten.cat
// as copies in any dtype; constant factory ops and slice/select_backward as fills and copies
// (their registry implementations, which already run at copy speed). Inputs may be strided views
// (transposed operands go to BLAS as transposes, anything else is packed first).
// docs/cpu-codegen.md, "Library kernels", says why each kernel is the one it is.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/tensor/tensor.h"

namespace loupe {

// What kernel selection records for a node a library kernel handles.
struct CpuLibraryKernel {
  std::string implementation;  // e.g. "openblas:sgemm", "im2col+gemm", "batch-norm:f32"
  std::string reason;          // why this kernel
  std::string whyNotGenerated; // why the code generator is not used instead
  // The op's decomposition goes first: its pieces are elementwise and fuse with their
  // neighbours, so this kernel runs the op only where the decomposition declines.
  bool decompositionFirst = false;
};

// The library kernel for this node (op, dtypes, attributes), or nullopt and, when whyNot is
// given, why none applies. Kernel selection and the runtime both ask this one function, so the
// trace always names the kernel that actually runs.
std::optional<CpuLibraryKernel> findCpuLibraryKernel(const Node& node, std::string* whyNot);

inline bool hasCpuLibraryKernel(const Node& node, std::string* whyNot) {
  return findCpuLibraryKernel(node, whyNot).has_value();
}

// Whether this build has oneDNN, which 2-D f32 convolution and its backward run through
// (library/onednn_convolution.h); without it they are im2col+gemm.
bool cpuLibraryHasOneDnn();

// Whether bf16 products (mm, bmm, addmm) run on oneDNN's bf16 matmul here: the build has oneDNN
// and oneDNN has its own bf16 kernels for this CPU (library/onednn_matmul.h); else through f32.
bool cpuLibraryHasBf16Matmul();

// Whether f32 products (mm, bmm, addmm with unit scales) run on oneDNN's matmul here: the build
// has oneDNN and oneDNN has its own f32 kernels for this CPU; else OpenBLAS's sgemm.
bool cpuLibraryHasF32Matmul();

// How many threads library kernels may use from now on (the OpenMP threads a BLAS product is
// split across, library/parallel_gemm.h); 0 leaves the setting as it is. An embedder passes its
// own setting (torch.get_num_threads()) so that Loupe's gemms do not wake threads the caller did
// not ask for: on a loaded machine a gemm split over two threads waits for the descheduled one.
// Without a call, OpenMP's default (OMP_NUM_THREADS, else one per core). Cheap.
void setCpuLibraryThreads(int threads);

// The threads CPU kernels started now on this thread may use, as the trace's kernel stats say
// it ("2 threads"): generated loops take OpenMP's count (torch's intra-op setting when
// embedded), BLAS products gemm's (setCpuLibraryThreads); when the two differ, both are named.
std::string cpuKernelThreads();

// `attrs` are the node's attributes with symbols bound; `outputs` are preallocated and
// contiguous, with the node's result shapes.
void runCpuLibraryKernel(const Node& node, const AttrMap& attrs,
                         const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs);

} // namespace loupe
