// 2-D f32 convolution and its backward through oneDNN (Debian's libdnnl-dev, 2.x): torch's own
// CPU convolution path: the forward in the blocked layouts torch's runs in, the backward in the
// layouts oneDNN prefers; the operands reordered into them, the results back to NCHW.
// Built only where CMake finds oneDNN (LOUPE_HAVE_ONEDNN); library_kernels.cpp falls back to
// im2col_convolution.h otherwise and for f64, which oneDNN does not compute.
//
// Threads: Debian's libdnnl runs on OpenMP (GOMP), so its parallel regions are the generated
// kernels' and, inside torch, torch's intra-op pool (docs/cpu-codegen.md, "Threads"). A call uses
// gemmThreads() threads, as BLAS products do.
#pragma once

#include <vector>

#include "compiler/codegen/cpu/library/convolution_geometry.h"
#include "compiler/ir/attribute.h"
#include "compiler/tensor/tensor.h"

namespace loupe::library {

// out = conv(input, weight) + bias (bias may be null); operands may be strided, out is
// contiguous.
void oneDnnConvolution(const Conv2dGeometry& g, const Tensor& input, const Tensor& weight,
                       const Tensor* bias, Tensor& out);

// grad_input, grad_weight, grad_bias into `outputs` (contiguous); the ones `mask` leaves out are
// zeros, as in the reference.
void oneDnnConvolutionBackward(const Conv2dGeometry& g, const Tensor& gradOutput,
                               const Tensor& input, const Tensor& weight, const BoolList& mask,
                               std::vector<Tensor>& outputs);

} // namespace loupe::library
