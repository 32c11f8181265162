// 2-D convolution and its backward as BLAS products: each image's group unfolded into columns
// (im2col), one gemm with the group's filters; the gradients as gemms over the same columns,
// folded back (col2im) for the input's. Any float precision BLAS has; the kernel used where
// oneDNN is not (onednn_convolution.h): f64, or a build without oneDNN.
#pragma once

#include <algorithm>
#include <cstring>
#include <vector>

#include "compiler/codegen/cpu/library/blas.h"
#include "compiler/codegen/cpu/library/convolution_geometry.h"
#include "compiler/codegen/cpu/library/scratch.h"

namespace loupe::library {

// Where image n's group g starts in the input (or its gradient), and in the output.
inline int64_t groupInputOffset(const Conv2dGeometry& g, int64_t n, int64_t group) {
  return (n * g.channels + group * g.groupChannels) * g.height * g.width;
}
inline int64_t groupOutputOffset(const Conv2dGeometry& g, int64_t n, int64_t group) {
  return (n * g.filters + group * g.groupFilters()) * g.pixels();
}

// visit(column, inputOffset) for every entry of one image's group's column matrix
// [patch, pixels]: the offset of the input element it holds from the group's first one, or
// -1 where the receptive field lies in the padding. im2col and col2im share this walk.
template <typename Visit>
void forEachColumnEntry(const Conv2dGeometry& g, Visit visit) {
  for (int64_t row = 0; row < g.patch(); ++row) {
    int64_t c = row / (g.kh * g.kw), ki = row / g.kw % g.kh, kj = row % g.kw;
    for (int64_t oh = 0; oh < g.outH; ++oh) {
      int64_t ih = oh * g.stride[0] - g.padding[0] + ki * g.dilation[0];
      for (int64_t ow = 0; ow < g.outW; ++ow) {
        int64_t iw = ow * g.stride[1] - g.padding[1] + kj * g.dilation[1];
        bool inside = ih >= 0 && ih < g.height && iw >= 0 && iw < g.width;
        visit(row * g.pixels() + oh * g.outW + ow,
              inside ? (c * g.height + ih) * g.width + iw : -1);
      }
    }
  }
}

template <typename T>
void im2col(const Conv2dGeometry& g, const T* groupInput, T* columns) {
  forEachColumnEntry(g, [&](int64_t column, int64_t offset) {
    columns[column] = offset < 0 ? T(0) : groupInput[offset];
  });
}

template <typename T>
void col2imAdd(const Conv2dGeometry& g, const T* columns, T* groupGradInput) {
  forEachColumnEntry(g, [&](int64_t column, int64_t offset) {
    if (offset >= 0) groupGradInput[offset] += columns[column];
  });
}

// A 1x1 convolution with stride 1 and no padding: each image's group of input planes is its
// own column matrix (patch = channels, pixels = the plane), so no columns are unfolded.
// Kernel selection asks it of a node's static kernel size and attributes (one value of stride or
// padding standing for both dims).
inline bool isPointwise(int64_t kh, int64_t kw, const std::vector<int64_t>& stride,
                        const std::vector<int64_t>& padding) {
  auto all = [](const std::vector<int64_t>& values, int64_t expected) {
    return std::all_of(values.begin(), values.end(), [&](int64_t v) { return v == expected; });
  };
  return kh == 1 && kw == 1 && all(stride, 1) && all(padding, 0);
}

inline bool isPointwiseConvolution(const Conv2dGeometry& g) {
  return isPointwise(g.kh, g.kw, g.stride, g.padding);
}

// Each image and group: unfold the receptive fields into columns (a pointwise convolution reads
// the input as they are), then one gemm with the group's filters, accumulated onto the bias
// written first (`bias` may be null): the bias costs no pass of its own.
template <typename T>
void im2colConvolution(const Conv2dGeometry& g, const Tensor& input, const Tensor& weight,
                       const Tensor* bias, Tensor& out) {
  Tensor x = input.contiguous(), w = weight.contiguous();
  Tensor b = bias ? bias->contiguous() : Tensor();
  int64_t pixels = g.pixels(), patch = g.patch(), groupFilters = g.groupFilters();
  bool direct = isPointwiseConvolution(g);
  Scratch<T> columns(direct ? 0 : patch * pixels);
  T* output = out.dataAs<T>();
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t group = 0; group < g.groups; ++group) {
      if (pixels == 0 || groupFilters == 0) continue;
      T* groupOutput = output + groupOutputOffset(g, n, group);
      if (bias)
        for (int64_t f = 0; f < groupFilters; ++f) {
          T value = b.dataAs<T>()[group * groupFilters + f];
          std::fill(groupOutput + f * pixels, groupOutput + (f + 1) * pixels, value);
        }
      const T* groupInput = x.dataAs<T>() + groupInputOffset(g, n, group);
      if (!direct) im2col(g, groupInput, columns.data());
      gemm(CblasNoTrans, CblasNoTrans, static_cast<int>(groupFilters), static_cast<int>(pixels),
           static_cast<int>(patch), w.dataAs<T>() + group * groupFilters * patch,
           static_cast<int>(patch), direct ? groupInput : columns.data(), static_cast<int>(pixels),
           groupOutput, static_cast<int>(pixels),
           /*beta=*/bias ? 1.0 : 0.0);
    }
}

// The three gradients (grad_input, grad_weight, grad_bias in `outputs`), per image and group over
// the same column matrix as the forward: grad_weight += grad_out @ columns^T, and grad_input is
// col2im of weight^T @ grad_out. Results `mask` leaves out are zeros, as in the reference.
template <typename T>
void im2colConvolutionBackward(const Conv2dGeometry& g, const Tensor& gradOutput,
                               const Tensor& input, const Tensor& weight, const BoolList& mask,
                               std::vector<Tensor>& outputs) {
  Tensor gradOut = gradOutput.contiguous(), x = input.contiguous(), w = weight.contiguous();
  for (Tensor& output : outputs)
    std::memset(output.data(), 0, output.nbytes());
  int64_t pixels = g.pixels(), patch = g.patch(), groupFilters = g.groupFilters();
  Scratch<T> columns(patch * pixels);
  T* gradInput = outputs[0].dataAs<T>();
  T* gradWeight = outputs[1].dataAs<T>();
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t group = 0; group < g.groups; ++group) {
      if (pixels == 0 || groupFilters == 0 || patch == 0) continue;
      const T* groupGradOut = gradOut.dataAs<T>() + groupOutputOffset(g, n, group);
      const T* groupWeight = w.dataAs<T>() + group * groupFilters * patch;
      if (mask[1]) {
        im2col(g, x.dataAs<T>() + groupInputOffset(g, n, group), columns.data());
        gemm(CblasNoTrans, CblasTrans, static_cast<int>(groupFilters), static_cast<int>(patch),
             static_cast<int>(pixels), groupGradOut, static_cast<int>(pixels), columns.data(),
             static_cast<int>(pixels), gradWeight + group * groupFilters * patch,
             static_cast<int>(patch), /*beta=*/1.0);
      }
      if (mask[0]) {
        gemm(CblasTrans, CblasNoTrans, static_cast<int>(patch), static_cast<int>(pixels),
             static_cast<int>(groupFilters), groupWeight, static_cast<int>(patch), groupGradOut,
             static_cast<int>(pixels), columns.data(), static_cast<int>(pixels));
        col2imAdd(g, columns.data(), gradInput + groupInputOffset(g, n, group));
      }
    }
  if (mask[2]) {
    T* gradBias = outputs[2].dataAs<T>();
    for (int64_t n = 0; n < g.batch; ++n)
      for (int64_t f = 0; f < g.filters; ++f) {
        const T* plane = gradOut.dataAs<T>() + (n * g.filters + f) * pixels;
        T sum = 0;
        for (int64_t p = 0; p < pixels; ++p)
          sum += plane[p];
        gradBias[f] += sum;
      }
  }
}

} // namespace loupe::library
