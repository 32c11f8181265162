// bf16 products through oneDNN's matmul, whose brgemm kernels use the CPU's bf16 dot products
// (AVX-512 BF16, AMX) where it has them: out = a @ b (+ bias), accumulated in f32 and rounded
// once to bf16, as torch's own CPU bf16 products are. Through f32 instead
// (library/reduced_float.h), every call widens the weights (16 MB a call for a 4096x1024 linear)
// and runs the f32 gemm at half the rate: a bf16 MLP block took 3x eager's time that way
// (docs/cpu-codegen.md). Built only where CMake finds oneDNN (LOUPE_HAVE_ONEDNN).
#pragma once

#include "compiler/tensor/tensor.h"

namespace loupe::library {

// Whether oneDNN has its own bf16 matmul kernels for this CPU, not only its reference loop.
bool oneDnnHasBf16Matmul();

// a [M,K] and b [K,N] (or both with one leading batch dim), bias (null, or broadcasting to out's
// last two dims), out [M,N] contiguous, all bf16; operands may be strided (a matrix neither row-
// nor column-major is packed first). Returns false, having written nothing, where oneDNN would
// run its reference loop for these operands: the caller computes through f32 then.
bool oneDnnBf16Matmul(const Tensor& a, const Tensor& b, const Tensor* bias, Tensor& out);

} // namespace loupe::library
