#include "compiler/codegen/cpu/library_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include <omp.h>

#include "compiler/codegen/cpu/library/attention.h"
#include "compiler/codegen/cpu/library/blas.h"
#include "compiler/codegen/cpu/library/concatenate.h"
#include "compiler/codegen/cpu/library/embedding.h"
#include "compiler/codegen/cpu/library/normalization.h"
#include "compiler/codegen/cpu/library/scratch.h"
#include "compiler/ir/error.h"

namespace loupe {

namespace {

using namespace library;

// Every floating-point kernel's signature: operands (nullptr for an absent optional one), the
// node's attributes with symbols bound, preallocated contiguous results.
using KernelFn = void (*)(const std::vector<const Tensor*>&, const AttrMap&, std::vector<Tensor>&);

template <typename T>
void mm(const std::vector<const Tensor*>& inputs, const AttrMap&, std::vector<Tensor>& outputs) {
  matmul<T>(*inputs[0], *inputs[1], outputs[0]);
}

Tensor batchItem(const Tensor& t, int64_t i) {
  return t.view({t.size(1), t.size(2)}, {t.strides()[1], t.strides()[2]},
                t.offset() + i * t.strides()[0]);
}

template <typename T>
void bmm(const std::vector<const Tensor*>& inputs, const AttrMap&, std::vector<Tensor>& outputs) {
  for (int64_t i = 0; i < outputs[0].size(0); ++i)
    matmul<T>(batchItem(*inputs[0], i), batchItem(*inputs[1], i), batchItem(outputs[0], i));
}

std::vector<int64_t> pair(const AttrMap& attrs, const char* name) {
  std::vector<int64_t> values = attrs.getInts(name);
  if (values.size() == 1) values.push_back(values[0]);
  return values;
}

// The sizes of a 2-D convolution; `output` is its result (or the gradient of it).
struct Conv2dGeometry {
  int64_t batch, channels, height, width; // input
  int64_t filters, groupChannels, kh, kw; // weight
  int64_t outH, outW;
  std::vector<int64_t> stride, padding, dilation;
  int64_t groups;

  Conv2dGeometry(const Tensor& input, const Tensor& weight, const Tensor& output,
                 const AttrMap& attrs)
      : batch(input.size(0)), channels(input.size(1)), height(input.size(2)), width(input.size(3)),
        filters(weight.size(0)), groupChannels(weight.size(1)), kh(weight.size(2)),
        kw(weight.size(3)), outH(output.size(2)), outW(output.size(3)),
        stride(pair(attrs, "stride")), padding(pair(attrs, "padding")),
        dilation(pair(attrs, "dilation")), groups(attrs.getInt("groups", 1)) {}

  int64_t pixels() const { return outH * outW; }
  int64_t patch() const { return groupChannels * kh * kw; }
  int64_t groupFilters() const { return filters / groups; }
  // Where image n's group g starts in the input (or its gradient).
  int64_t groupInputOffset(int64_t n, int64_t g) const {
    return (n * channels + g * groupChannels) * height * width;
  }
  int64_t groupOutputOffset(int64_t n, int64_t g) const {
    return (n * filters + g * groupFilters()) * pixels();
  }

  // visit(column, inputOffset) for every entry of one image's group's column matrix
  // [patch, pixels]: the offset of the input element it holds from the group's first one, or
  // -1 where the receptive field lies in the padding. im2col and col2im share this walk.
  template <typename Visit>
  void forEachColumnEntry(Visit visit) const {
    for (int64_t row = 0; row < patch(); ++row) {
      int64_t c = row / (kh * kw), ki = row / kw % kh, kj = row % kw;
      for (int64_t oh = 0; oh < outH; ++oh) {
        int64_t ih = oh * stride[0] - padding[0] + ki * dilation[0];
        for (int64_t ow = 0; ow < outW; ++ow) {
          int64_t iw = ow * stride[1] - padding[1] + kj * dilation[1];
          bool inside = ih >= 0 && ih < height && iw >= 0 && iw < width;
          visit(row * pixels() + oh * outW + ow, inside ? (c * height + ih) * width + iw : -1);
        }
      }
    }
  }
};

template <typename T>
void im2col(const Conv2dGeometry& g, const T* groupInput, T* columns) {
  g.forEachColumnEntry([&](int64_t column, int64_t offset) {
    columns[column] = offset < 0 ? T(0) : groupInput[offset];
  });
}

template <typename T>
void col2imAdd(const Conv2dGeometry& g, const T* columns, T* groupGradInput) {
  g.forEachColumnEntry([&](int64_t column, int64_t offset) {
    if (offset >= 0) groupGradInput[offset] += columns[column];
  });
}

// Each image and group: unfold the receptive fields into columns, then one gemm with the
// group's filters.
template <typename T>
void convolution2d(const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
                   std::vector<Tensor>& outputs) {
  Tensor& out = outputs[0];
  Tensor x = inputs[0]->contiguous(), w = inputs[1]->contiguous();
  Conv2dGeometry g(x, w, out, attrs);
  int64_t pixels = g.pixels(), patch = g.patch(), groupFilters = g.groupFilters();
  Scratch<T> columns(patch * pixels);
  T* output = out.dataAs<T>();
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t group = 0; group < g.groups; ++group) {
      if (pixels == 0 || groupFilters == 0) continue;
      im2col(g, x.dataAs<T>() + g.groupInputOffset(n, group), columns.data());
      gemm(CblasNoTrans, CblasNoTrans, static_cast<int>(groupFilters), static_cast<int>(pixels),
           static_cast<int>(patch), w.dataAs<T>() + group * groupFilters * patch,
           static_cast<int>(patch), columns.data(), static_cast<int>(pixels),
           output + g.groupOutputOffset(n, group), static_cast<int>(pixels));
    }
  if (inputs.size() > 2 && inputs[2]) {
    Tensor bias = inputs[2]->contiguous();
    for (int64_t n = 0; n < g.batch; ++n)
      for (int64_t f = 0; f < g.filters; ++f) {
        T* plane = output + (n * g.filters + f) * pixels;
        for (int64_t p = 0; p < pixels; ++p)
          plane[p] += bias.dataAs<T>()[f];
      }
  }
}

// The three gradients of a 2-D convolution, per image and group over the same column matrix
// as the forward: grad_weight += grad_out @ columns^T, and grad_input is col2im of
// weight^T @ grad_out. Results output_mask leaves out are zeros, as in the reference.
template <typename T>
void convolution2dBackward(const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
                           std::vector<Tensor>& outputs) {
  Tensor gradOut = inputs[0]->contiguous(), x = inputs[1]->contiguous(),
         w = inputs[2]->contiguous();
  Conv2dGeometry g(x, w, gradOut, attrs);
  BoolList mask = attrs.getBools("output_mask");
  for (Tensor& output : outputs)
    std::memset(output.data(), 0, output.nbytes());
  int64_t pixels = g.pixels(), patch = g.patch(), groupFilters = g.groupFilters();
  Scratch<T> columns(patch * pixels);
  T* gradInput = outputs[0].dataAs<T>();
  T* gradWeight = outputs[1].dataAs<T>();
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t group = 0; group < g.groups; ++group) {
      if (pixels == 0 || groupFilters == 0 || patch == 0) continue;
      const T* groupGradOut = gradOut.dataAs<T>() + g.groupOutputOffset(n, group);
      const T* groupWeight = w.dataAs<T>() + group * groupFilters * patch;
      if (mask[1]) {
        im2col(g, x.dataAs<T>() + g.groupInputOffset(n, group), columns.data());
        gemm(CblasNoTrans, CblasTrans, static_cast<int>(groupFilters), static_cast<int>(patch),
             static_cast<int>(pixels), groupGradOut, static_cast<int>(pixels), columns.data(),
             static_cast<int>(pixels), gradWeight + group * groupFilters * patch,
             static_cast<int>(patch), /*beta=*/1.0);
      }
      if (mask[0]) {
        gemm(CblasTrans, CblasNoTrans, static_cast<int>(patch), static_cast<int>(pixels),
             static_cast<int>(groupFilters), groupWeight, static_cast<int>(patch), groupGradOut,
             static_cast<int>(pixels), columns.data(), static_cast<int>(pixels));
        col2imAdd(g, columns.data(), gradInput + g.groupInputOffset(n, group));
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

// Max pooling over the last two dims, every leading dim flattened into planes; indices are the
// flat h * W + w position in the plane, as torch's. Window parameters as the op's attributes.
struct PoolGeometry {
  int64_t planes, inH, inW, outH, outW;
  std::vector<int64_t> kernel, stride, padding, dilation;

  PoolGeometry(const Tensor& input, const Tensor& output, const AttrMap& attrs)
      : inH(input.size(input.rank() - 2)), inW(input.size(input.rank() - 1)),
        outH(output.size(output.rank() - 2)), outW(output.size(output.rank() - 1)),
        kernel(pair(attrs, "kernel_size")),
        stride(attrs.isNone("stride") || attrs.getInts("stride").empty() ? kernel
                                                                         : pair(attrs, "stride")),
        padding(attrs.isNone("padding") ? std::vector<int64_t>{0, 0} : pair(attrs, "padding")),
        dilation(attrs.isNone("dilation") ? std::vector<int64_t>{1, 1} : pair(attrs, "dilation")) {
    planes = inH * inW == 0 ? 0 : input.numel() / (inH * inW);
  }
};

template <typename T>
void maxPool2d(const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
               std::vector<Tensor>& outputs) {
  Tensor x = inputs[0]->contiguous();
  PoolGeometry g(x, outputs[0], attrs);
  T* out = outputs[0].dataAs<T>();
  auto* indices = outputs[1].dataAs<int64_t>();
  for (int64_t p = 0; p < g.planes; ++p) {
    const T* plane = x.dataAs<T>() + p * g.inH * g.inW;
    for (int64_t oh = 0; oh < g.outH; ++oh)
      for (int64_t ow = 0; ow < g.outW; ++ow) {
        T best = 0;
        int64_t bestIndex = -1;
        for (int64_t ki = 0; ki < g.kernel[0]; ++ki) {
          int64_t ih = oh * g.stride[0] - g.padding[0] + ki * g.dilation[0];
          if (ih < 0 || ih >= g.inH) continue;
          for (int64_t kj = 0; kj < g.kernel[1]; ++kj) {
            int64_t iw = ow * g.stride[1] - g.padding[1] + kj * g.dilation[1];
            if (iw < 0 || iw >= g.inW) continue;
            // torch keeps the first maximum and lets NaN win, so NaN propagates.
            T v = plane[ih * g.inW + iw];
            if (bestIndex < 0 || v > best || std::isnan(v)) {
              best = v;
              bestIndex = ih * g.inW + iw;
            }
          }
        }
        int64_t o = (p * g.outH + oh) * g.outW + ow;
        out[o] = bestIndex < 0 ? -std::numeric_limits<T>::infinity() : best;
        indices[o] = bestIndex;
      }
  }
}

// Each output's gradient goes to the input position its index names.
template <typename T>
void maxPool2dBackward(const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
                       std::vector<Tensor>& outputs) {
  Tensor gradOut = inputs[0]->contiguous(), indices = inputs[2]->contiguous();
  PoolGeometry g(*inputs[1], gradOut, attrs);
  T* gradIn = outputs[0].dataAs<T>();
  std::memset(gradIn, 0, outputs[0].nbytes());
  const T* grad = gradOut.dataAs<T>();
  const auto* index = indices.dataAs<int64_t>();
  int64_t pooled = g.outH * g.outW;
  for (int64_t p = 0; p < g.planes; ++p)
    for (int64_t o = p * pooled; o < (p + 1) * pooled; ++o)
      gradIn[p * g.inH * g.inW + index[o]] += grad[o];
}

bool isBlasDType(DType dtype) {
  return dtype == DType::F32 || dtype == DType::F64;
}

// What each floating-point library kernel records and runs; the index tensors of max pooling
// (its second result, its backward's third operand) and of the embeddings (their second
// operand) are i64, every other value is in the first result's dtype. `precision` is "f32" or
// "f64".
struct FloatKernel {
  const char* op;
  std::function<CpuLibraryKernel(const std::string& precision)> describe;
  KernelFn f32, f64;
  std::optional<size_t> indexOperand = std::nullopt, indexResult = std::nullopt;
};

// A kernel named `name` that computes `what` in the input's precision.
std::function<CpuLibraryKernel(const std::string&)> inPrecision(std::string name, std::string what,
                                                                std::string whyNotGenerated) {
  return [=](const std::string& precision) {
    return CpuLibraryKernel{name + ":" + precision, what + " in " + precision, whyNotGenerated};
  };
}

const std::vector<FloatKernel>& floatKernels() {
  static const std::vector<FloatKernel> kernels = [] {
    auto gemmKernel = [](const std::string& precision) {
      return CpuLibraryKernel{precision == "f32" ? "openblas:sgemm" : "openblas:dgemm",
                              "BLAS gemm for " + precision, "no generated matmul; BLAS is faster"};
    };
    auto batchNormKernel = [](const std::string& precision) {
      return CpuLibraryKernel{"batch-norm:" + precision,
                              "per-channel statistics in double, normalisation in " + precision,
                              "batch norm is not an elementwise or reduction op the code "
                              "generator handles"};
    };
    auto normBackward = [](std::string name) {
      return [name](const std::string& precision) {
        return CpuLibraryKernel{name + "-backward:" + precision,
                                "sums in double, the elementwise gradient in " + precision,
                                "a normalization backward is several reductions feeding an "
                                "elementwise op, which the code generator does not fuse"};
      };
    };
    auto attentionKernel = [](std::string form) {
      return [form](const std::string& precision) {
        return CpuLibraryKernel{"flash-attention" + form + ":" + precision,
                                "blocked BLAS gemms per (batch, head) and a stable softmax in " +
                                    precision,
                                "no generated matmul or softmax across gemms; BLAS is faster"};
      };
    };
    std::vector<FloatKernel> table = {
        {"aten.mm", gemmKernel, &mm<float>, &mm<double>},
        {"aten.bmm", gemmKernel, &bmm<float>, &bmm<double>},
        {"aten.convolution",
         [](const std::string&) {
           return CpuLibraryKernel{"im2col+gemm",
                                   "convolution as im2col and one BLAS gemm per group",
                                   "no generated convolution; im2col+gemm is faster"};
         },
         &convolution2d<float>, &convolution2d<double>},
        {"aten.convolution_backward",
         [](const std::string&) {
           return CpuLibraryKernel{"im2col+gemm backward",
                                   "gradients as BLAS gemms over the forward's im2col columns",
                                   "no generated convolution; im2col+gemm is faster"};
         },
         &convolution2dBackward<float>, &convolution2dBackward<double>},
        {"aten.max_pool2d_with_indices",
         inPrecision("max-pool", "window maximum",
                     "pooling windows are not a reduction the code generator "
                     "handles"),
         &maxPool2d<float>, &maxPool2d<double>, std::nullopt, 1},
        {"aten.max_pool2d_with_indices_backward",
         inPrecision("max-pool-backward", "scatter of each gradient to its argmax",
                     "a scatter is not a kernel the code generator handles"),
         &maxPool2dBackward<float>, &maxPool2dBackward<double>, 2},
        {"aten.native_batch_norm_backward", normBackward("batch-norm"), &batchNormBackward<float>,
         &batchNormBackward<double>},
        {"aten.native_layer_norm_backward", normBackward("layer-norm"), &layerNormBackward<float>,
         &layerNormBackward<double>},
        {"aten.embedding",
         inPrecision("embedding", "row copies",
                     "a gather of rows is not a kernel the code generator handles"),
         &embedding<float>, &embedding<double>, 1},
        {"aten.embedding_dense_backward",
         inPrecision("embedding-backward", "row sums",
                     "a scatter-add of rows is not a kernel the code generator handles"),
         &embeddingDenseBackward<float>, &embeddingDenseBackward<double>, 1},
        {"aten._scaled_dot_product_flash_attention_for_cpu", attentionKernel(""), &attention<float>,
         &attention<double>},
        {"aten._scaled_dot_product_flash_attention_for_cpu_backward", attentionKernel("-backward"),
         &attentionBackward<float>, &attentionBackward<double>},
    };
    for (const char* op : {"aten._native_batch_norm_legit_functional",
                           "aten._native_batch_norm_legit_no_training", "aten.native_batch_norm"})
      table.push_back({op, batchNormKernel, &batchNorm<float>, &batchNorm<double>});
    return table;
  }();
  return kernels;
}

const FloatKernel* findFloatKernel(const std::string& op) {
  auto kernel = std::find_if(floatKernels().begin(), floatKernels().end(),
                             [&](const FloatKernel& k) { return op == k.op; });
  return kernel == floatKernels().end() ? nullptr : &*kernel;
}

bool isTwoDConvolution(const Node& node) {
  return node.operand(node.op() == "aten.convolution" ? 0 : 1)->tensorType().rank() == 4;
}

bool hasDType(const Value* value, DType expected) {
  return value->type().isTensor() && value->tensorType().dtype == expected;
}

// Copies in the tensors' own dtype, any dtype: clone and cat.
std::optional<CpuLibraryKernel> findCopyKernel(const Node& node, std::string* whyNot) {
  if (node.op() == "aten.clone")
    return CpuLibraryKernel{"copy", "a memcpy, or a strided copy in the tensor's own dtype",
                            "a copy needs no generated code"};
  if (node.op() != "aten.cat") return std::nullopt;
  DType dtype = node.result(0)->tensorType().dtype;
  for (size_t i = 0; i < node.numOperands(); ++i)
    if (!hasDType(node.operand(i), dtype)) {
      if (whyNot) *whyNot = "cat converts operand " + std::to_string(i) + " to the result's dtype";
      return std::nullopt;
    }
  return CpuLibraryKernel{"concatenate",
                          "one memcpy per slab of a contiguous input, else a strided copy, in "
                          "the tensors' own dtype",
                          "a copy needs no generated code"};
}

} // namespace

std::optional<CpuLibraryKernel> findCpuLibraryKernel(const Node& node, std::string* whyNot) {
  auto no = [&](std::string why) -> std::optional<CpuLibraryKernel> {
    if (whyNot) *whyNot = std::move(why);
    return std::nullopt;
  };
  const std::string& op = node.op();
  if (op == "aten.clone" || op == "aten.cat") return findCopyKernel(node, whyNot);
  const FloatKernel* kernel = findFloatKernel(op);
  if (!kernel) return no("no library kernel for " + op);
  if (!node.numResults() || !node.result(0)->type().isTensor())
    return no(op + " has no tensor result");
  DType dtype = node.result(0)->tensorType().dtype;
  if (!isBlasDType(dtype))
    return no("library kernels compute in f32 or f64 only, not " + std::string(dtypeName(dtype)));
  for (size_t i = 0; i < node.numOperands(); ++i)
    if (const Value* operand = node.operand(i);
        operand && !hasDType(operand, kernel->indexOperand == i ? DType::I64 : dtype))
      return no(kernel->indexOperand == i ? "the indices operand must be i64"
                                          : "library kernels need every operand in the result's "
                                            "dtype");
  for (size_t i = 0; i < node.numResults(); ++i)
    if (!hasDType(node.result(i), kernel->indexResult == i ? DType::I64 : dtype))
      return no("library kernels need every result in the first result's dtype");
  if (op.starts_with("aten.convolution")) {
    if (!isTwoDConvolution(node)) return no("only 2-D convolution has a library kernel");
    if (node.attrs().getBool("transposed", false))
      return no("transposed convolution has no library kernel");
  }
  return kernel->describe(std::string(dtypeName(dtype)));
}

void setCpuLibraryThreads(int threads) {
  if (threads > 0) setGemmThreads(threads);
}

std::string cpuKernelThreads() {
  auto count = [](int threads) {
    return std::to_string(threads) + (threads == 1 ? " thread" : " threads");
  };
  int loops = omp_get_max_threads(), products = gemmThreads();
  return loops == products ? count(loops)
                           : "loops on " + count(loops) + ", BLAS on " + count(products);
}

void runCpuLibraryKernel(const Node& node, const AttrMap& attrs,
                         const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const std::string& op = node.op();
  if (op == "aten.clone") {
    outputs[0].copyFrom(*inputs[0]);
    return;
  }
  if (op == "aten.cat") {
    concatenate(inputs, attrs, outputs[0]);
    return;
  }
  const FloatKernel* kernel = findFloatKernel(op);
  if (!kernel)
    throw Error("runtime", "no library kernel for " + op, ErrorContext{.node = node.describe()});
  (outputs[0].dtype() == DType::F64 ? kernel->f64 : kernel->f32)(inputs, attrs, outputs);
}

} // namespace loupe
