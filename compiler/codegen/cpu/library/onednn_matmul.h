// f32 and bf16 products through oneDNN's matmul: out = a @ b (+ bias, in its epilogue). Its
// brgemm kernels beat OpenBLAS's sgemm at every size measured for f32 (a [64,2048] by
// [2048,512] linear on 2 threads: 0.64 ms against 1.00), and use the CPU's bf16 dot products
// (AVX-512 BF16, AMX) for bf16, accumulated in f32 and rounded once to bf16, as torch's own CPU
// bf16 products are. Through f32 instead (library/reduced_float.h), every bf16 call widens the
// weights (16 MB a call for a 4096x1024 linear) and runs the f32 gemm at half the rate: a bf16
// MLP block took 3x eager's time that way (docs/cpu-codegen.md). Built only where CMake finds
// oneDNN (LOUPE_HAVE_ONEDNN).
#pragma once

#include "compiler/tensor/tensor.h"

namespace loupe::library {

// Whether oneDNN has its own matmul kernels in `dtype` (F32 or BF16) for this CPU, not only its
// reference loop.
bool oneDnnHasMatmul(DType dtype);

// a [M,K] and b [K,N] (or both with one leading batch dim), bias (null, or broadcasting to out's
// last two dims), out [M,N] contiguous, all f32 or all bf16; operands may be strided (a matrix
// neither row- nor column-major is packed first). Returns false, having written nothing, where
// oneDNN would run its reference loop for these operands: the caller computes otherwise then
// (BLAS for f32, through f32 for bf16).
bool oneDnnMatmul(const Tensor& a, const Tensor& b, const Tensor* bias, Tensor& out);

} // namespace loupe::library
