#include "compiler/codegen/cpu/library_kernels.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <type_traits>

#include <omp.h>

#include "compiler/codegen/cpu/library/advanced_indexing.h"
#include "compiler/codegen/cpu/library/attention.h"
#include "compiler/codegen/cpu/library/avg_pool.h"
#include "compiler/codegen/cpu/library/blas.h"
#include "compiler/codegen/cpu/library/concatenate.h"
#include "compiler/codegen/cpu/library/depthwise_convolution.h"
#include "compiler/codegen/cpu/library/dropout.h"
#include "compiler/codegen/cpu/library/embedding.h"
#include "compiler/codegen/cpu/library/im2col_convolution.h"
#include "compiler/codegen/cpu/library/max_pool.h"
#include "compiler/codegen/cpu/library/normalization.h"
#ifdef LOUPE_HAVE_ONEDNN
#include "compiler/codegen/cpu/library/onednn_convolution.h"
#include "compiler/codegen/cpu/library/onednn_matmul.h"
#endif
#include "compiler/codegen/cpu/library/reduced_float.h"
#include "compiler/ir/error.h"
#include "compiler/ops/factory.h"
#include "compiler/ops/op_registry.h"

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

// aten.addmm(self, mat1, mat2): beta * self + alpha * mat1 @ mat2, self broadcast.
template <typename T>
void addmm(const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
           std::vector<Tensor>& outputs) {
  biasedMatmul<T>(*inputs[0], *inputs[1], *inputs[2], outputs[0], attrs.getFloat("beta", 1.0),
                  attrs.getFloat("alpha", 1.0));
}

Tensor batchItem(const Tensor& t, int64_t i) {
  return t.view({t.size(1), t.size(2)}, {t.strides()[1], t.strides()[2]},
                t.offset() + i * t.strides()[0]);
}

// The batch is split across the library threads when that gives every thread the same number
// of matrices, or several: each product then runs whole on its thread (a gemm inside a parallel
// region is not split again), which beats splitting every small product across the threads.
// Otherwise each product is split (library/parallel_gemm.h).
// An operand whose matrices BLAS cannot read in place (every matrix has the same strides) is
// packed once, on the calling thread, where the call's memory meter counts it, rather than
// matrix by matrix on the threads.
Tensor blasReadable(const Tensor& batched) {
  if (batched.size(0) == 0 || !asBlasMatrix(batchItem(batched, 0)).packed.defined()) return batched;
  return batched.contiguous();
}

template <typename T>
void bmm(const std::vector<const Tensor*>& inputs, const AttrMap&, std::vector<Tensor>& outputs) {
  Tensor a = blasReadable(*inputs[0]), b = blasReadable(*inputs[1]);
  int64_t batch = outputs[0].size(0);
  int threads = gemmThreads();
  bool overBatch = threads > 1 && (batch % threads == 0 || batch >= 4 * threads);
#pragma omp parallel for num_threads(threads) schedule(static) if (overBatch)
  for (int64_t i = 0; i < batch; ++i)
    matmul<T>(batchItem(a, i), batchItem(b, i), batchItem(outputs[0], i));
}

// Convolution runs through oneDNN where the build has it and it computes the dtype (f32; it has
// no f64 convolution), else as im2col and BLAS gemms. A convolution without elements takes the
// im2col path too, which needs no primitive for it.
#ifdef LOUPE_HAVE_ONEDNN
constexpr bool kOneDnnBuiltIn = true;
#else
constexpr bool kOneDnnBuiltIn = false;
#endif

template <typename T>
bool runsOnOneDnn(const std::vector<const Tensor*>& inputs, const std::vector<Tensor>& outputs) {
  return kOneDnnBuiltIn && std::is_same_v<T, float> && inputs[0]->numel() > 0 &&
         inputs[1]->numel() > 0 && outputs[0].numel() > 0;
}

// A product (mm, bmm, addmm with unit scales) in f32 or bf16, every operand of one dtype, runs on
// oneDNN's matmul where the build has oneDNN and oneDNN has its own kernels in that dtype for
// this CPU (onednn_matmul.h): f32 else on OpenBLAS's sgemm, bf16 through f32.
bool runsAsOneDnnMatmul(const Node& node) {
  const std::string& op = node.op();
  if (!kOneDnnBuiltIn || (op != "aten.mm" && op != "aten.bmm" && op != "aten.addmm")) return false;
  if (!node.numResults() || !node.result(0)->type().isTensor()) return false;
  DType dtype = node.result(0)->tensorType().dtype;
  for (const Value* operand : node.operands())
    if (!operand || !operand->type().isTensor() || operand->tensorType().dtype != dtype)
      return false;
  if (op == "aten.addmm" &&
      (node.attrs().getFloat("alpha", 1.0) != 1.0 || node.attrs().getFloat("beta", 1.0) != 1.0))
    return false;
  return dtype == DType::BF16 ? cpuLibraryHasBf16Matmul()
                              : dtype == DType::F32 && cpuLibraryHasF32Matmul();
}

// The product on oneDNN's matmul; false where oneDNN has only its reference loop for these
// operands' layouts (the caller computes on BLAS, through f32 for bf16).
bool oneDnnProduct(const Node& node, const std::vector<const Tensor*>& inputs,
                   std::vector<Tensor>& outputs) {
  DType dtype = outputs[0].dtype();
  if (!std::all_of(inputs.begin(), inputs.end(),
                   [&](const Tensor* t) { return t && t->dtype() == dtype; }))
    return false;
#ifdef LOUPE_HAVE_ONEDNN
  if (node.op() == "aten.addmm") return oneDnnMatmul(*inputs[1], *inputs[2], inputs[0], outputs[0]);
  return oneDnnMatmul(*inputs[0], *inputs[1], nullptr, outputs[0]);
#else
  (void)node, (void)inputs, (void)outputs;
  return false;
#endif
}

// A pointwise (1x1) convolution runs as one gemm per image on the input as it is, in NCHW
// (im2col_convolution.h): 3.5x faster than oneDNN there, whose blocked layouts cost a reorder
// each way (docs/cpu-codegen.md, "Library kernels").
// A depthwise convolution is each plane's taps summed in NCHW (depthwise_convolution.h).
template <typename T>
void plainConvolution2d(const Conv2dGeometry& g, const Tensor& input, const Tensor& weight,
                        const Tensor* bias, Tensor& out) {
  if (isDepthwiseConvolution(g) && out.numel() > 0)
    return depthwiseConvolution<T>(g, input, weight, bias, out);
#ifdef LOUPE_HAVE_ONEDNN
  if (runsOnOneDnn<T>({&input, &weight}, {out}) && !isPointwiseConvolution(g))
    return oneDnnConvolution(g, input, weight, bias, out);
#endif
  im2colConvolution<T>(g, input, weight, bias, out);
}

// grad_input, grad_weight and grad_bias of the plain convolution `g`, as `mask` asks.
template <typename T>
void plainConvolution2dBackward(const Conv2dGeometry& g, const Tensor& gradOut, const Tensor& input,
                                const Tensor& weight, const BoolList& mask,
                                std::vector<Tensor>& outputs) {
#ifdef LOUPE_HAVE_ONEDNN
  if (runsOnOneDnn<T>({&input, &weight}, {gradOut}))
    return oneDnnConvolutionBackward(g, gradOut, input, weight, mask, outputs);
#endif
  im2colConvolutionBackward<T>(g, gradOut, input, weight, mask, outputs);
}

// Per output channel: the sums of `gradOut` over its batch and pixels, into `gradBias`.
template <typename T>
void channelSums(const Tensor& gradOut, Tensor& gradBias) {
  Tensor g = gradOut.contiguous();
  int64_t batch = g.size(0), channels = g.size(1),
          pixels = g.numel() / std::max<int64_t>(batch * channels, 1);
  T* sums = gradBias.dataAs<T>();
  for (int64_t c = 0; c < channels; ++c) {
    double sum = 0;
    for (int64_t n = 0; n < batch; ++n) {
      const T* plane = g.dataAs<T>() + (n * channels + c) * pixels;
      for (int64_t p = 0; p < pixels; ++p)
        sum += plane[p];
    }
    sums[c] = static_cast<T>(sum);
  }
}

// A stand-in for a gradient the mask leaves out: the convolution kernels zero such a result and
// never index it, so one element does.
inline Tensor unrequested(DType dtype) {
  return Tensor::empty(dtype, {1});
}

// A transposed convolution is the adjoint of the plain one from its output's space to its
// input's (compiler/ops/convolution.cpp): `g` below is that plain convolution, whose input is
// the transposed one's output.
template <typename T>
void transposedConvolution2d(const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
                             std::vector<Tensor>& outputs) {
  const Tensor &x = *inputs[0], &weight = *inputs[1];
  Tensor& out = outputs[0];
  Conv2dGeometry g(out, weight, x, attrs);
  // The plain convolution's input gradient for grad_output = x; its weight's and bias's
  // gradients are not asked for (one-element stand-ins the kernels zero and never index).
  std::vector<Tensor> grads = {out, unrequested(weight.dtype()), unrequested(weight.dtype())};
  plainConvolution2dBackward<T>(g, x, out, weight, {true, false, false}, grads);
  if (inputs.size() > 2 && inputs[2]) {
    Tensor b = inputs[2]->contiguous();
    int64_t channels = out.size(1),
            pixels = out.numel() / std::max<int64_t>(out.size(0) * channels, 1);
    T* o = out.dataAs<T>();
    for (int64_t n = 0; n < out.size(0); ++n)
      for (int64_t c = 0; c < channels; ++c) {
        T* plane = o + (n * channels + c) * pixels;
        T add = b.dataAs<T>()[c];
        for (int64_t p = 0; p < pixels; ++p)
          plane[p] += add;
      }
  }
}

// inputs: grad_output (the transposed output's space), input, weight.
template <typename T>
void transposedConvolution2dBackward(const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
                                     std::vector<Tensor>& outputs) {
  const Tensor &gradOut = *inputs[0], &x = *inputs[1], &weight = *inputs[2];
  BoolList mask = attrs.getBools("output_mask");
  Conv2dGeometry g(gradOut, weight, x, attrs);
  // grad_input: the plain convolution of grad_output.
  if (mask[0])
    plainConvolution2d<T>(g, gradOut, weight, nullptr, outputs[0]);
  else
    std::memset(outputs[0].data(), 0, outputs[0].nbytes());
  // grad_weight: the plain convolution's weight gradient, grad_output its input and x its
  // output's gradient.
  if (mask[1]) {
    std::vector<Tensor> grads = {unrequested(gradOut.dtype()), outputs[1],
                                 unrequested(weight.dtype())};
    plainConvolution2dBackward<T>(g, x, gradOut, weight, {false, true, false}, grads);
  } else {
    std::memset(outputs[1].data(), 0, outputs[1].nbytes());
  }
  if (mask[2])
    channelSums<T>(gradOut, outputs[2]);
  else
    std::memset(outputs[2].data(), 0, outputs[2].nbytes());
}

template <typename T>
void convolution2d(const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
                   std::vector<Tensor>& outputs) {
  if (attrs.getBool("transposed", false)) return transposedConvolution2d<T>(inputs, attrs, outputs);
  Conv2dGeometry g(*inputs[0], *inputs[1], outputs[0], attrs);
  plainConvolution2d<T>(g, *inputs[0], *inputs[1], inputs.size() > 2 ? inputs[2] : nullptr,
                        outputs[0]);
}

template <typename T>
void convolution2dBackward(const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
                           std::vector<Tensor>& outputs) {
  if (attrs.getBool("transposed", false))
    return transposedConvolution2dBackward<T>(inputs, attrs, outputs);
  Conv2dGeometry g(*inputs[1], *inputs[2], *inputs[0], attrs);
  plainConvolution2dBackward<T>(g, *inputs[0], *inputs[1], *inputs[2],
                                attrs.getBools("output_mask"), outputs);
}

// A 1-D convolution (conv1d, ConvTranspose1d and their gradients) is the 2-D one over images
// one pixel high, as torch runs it too: its tensors of rank 3 ([N, C, L], a weight [O, C/g, K])
// viewed with a unit height inserted (no copy: the results are views of the executable's
// buffers), its window attributes given the height's stride, padding and dilation of one pixel.
// Before, every 1-D convolution ran the registry's reference loop, 17 to 320x torch's time
// (docs/cpu-codegen.md, "Library kernels").
Tensor withUnitHeight(const Tensor& t) {
  if (t.rank() != 3) return t; // a bias, a gradient's stand-in
  std::vector<int64_t> shape = t.shape(), strides = t.strides();
  shape.insert(shape.begin() + 2, 1);
  strides.insert(strides.begin() + 2, t.size(2) * strides[2]); // contiguous stays contiguous
  return t.view(std::move(shape), std::move(strides), t.offset());
}

AttrMap withUnitHeight(const AttrMap& attrs) {
  AttrMap twoD = attrs;
  for (auto [name, height] :
       {std::pair{"stride", 1}, {"padding", 0}, {"dilation", 1}, {"output_padding", 0}})
    if (const Attribute* value = attrs.find(name);
        value && std::holds_alternative<IntList>(*value)) {
      IntList dims = std::get<IntList>(*value);
      dims.insert(dims.begin(), SymExpr(height));
      twoD.set(name, std::move(dims));
    }
  return twoD;
}

// A convolution kernel of either rank: 1-D through the 2-D one, as above.
template <void (*kernel)(const std::vector<const Tensor*>&, const AttrMap&, std::vector<Tensor>&)>
void anyRankConvolution(const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
                        std::vector<Tensor>& outputs) {
  bool oneD = std::any_of(inputs.begin(), inputs.end(),
                          [](const Tensor* t) { return t && t->rank() == 3; });
  if (!oneD) return kernel(inputs, attrs, outputs);
  std::vector<Tensor> viewed;
  viewed.reserve(inputs.size());
  std::vector<const Tensor*> twoDInputs;
  for (const Tensor* t : inputs)
    twoDInputs.push_back(t ? &viewed.emplace_back(withUnitHeight(*t)) : nullptr);
  std::vector<Tensor> twoDOutputs;
  for (const Tensor& t : outputs)
    twoDOutputs.push_back(withUnitHeight(t));
  kernel(twoDInputs, withUnitHeight(attrs), twoDOutputs);
}

// What kernel selection records for a convolution (forward, or backward with `backward`).
CpuLibraryKernel convolutionKernel(const std::string& precision, bool backward) {
  const char* whyNotGenerated = "no generated convolution";
  std::string what = backward ? "convolution backward" : "convolution";
  if (kOneDnnBuiltIn && precision == "f32")
    return {backward ? "onednn:convolution-backward" : "onednn:convolution",
            "oneDNN's " + what +
                " (torch's own CPU path) in the blocked layouts torch's picks; im2col+gemm, the "
                "alternative, measured 1.2 to 13x slower than torch",
            whyNotGenerated};
  std::string why = kOneDnnBuiltIn ? "oneDNN has no f64 convolution" : "oneDNN not built in";
  return {backward ? "im2col+gemm backward" : "im2col+gemm",
          backward ? "gradients as BLAS gemms over the forward's im2col columns (" + why + ")"
                   : "convolution as im2col and one BLAS gemm per group (" + why + ")",
          whyNotGenerated};
}

bool isBlasDType(DType dtype) {
  return dtype == DType::F32 || dtype == DType::F64;
}

// What each floating-point library kernel records and runs; the index tensors of max pooling
// (its second result, its backward's third operand) and of the embeddings (their second
// operand) are i64, dropout's mask (its second result) bool, every other value is in the first
// result's dtype. `precision` is "f32" or "f64".
struct FloatKernel {
  const char* op;
  std::function<CpuLibraryKernel(const std::string& precision)> describe;
  KernelFn f32, f64;
  std::optional<size_t> indexOperand = std::nullopt, indexResult = std::nullopt;
  DType indexDType = DType::I64; // a mask's: bool
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
    auto biasedGemmKernel = [](const std::string& precision) {
      return CpuLibraryKernel{
          precision == "f32" ? "openblas:sgemm+bias" : "openblas:dgemm+bias",
          "BLAS gemm for " + precision + " accumulating onto the bias, written block by block",
          "decomposed, the bias add is a generated kernel of its own: one more pass over the "
          "product"};
    };
    auto batchNormKernel = [](const std::string& precision) {
      return CpuLibraryKernel{"batch-norm:" + precision,
                              "per-channel statistics in double, normalisation in " + precision,
                              "batch norm is not an elementwise or reduction op the code "
                              "generator handles"};
    };
    auto normBackward = [](std::string name, std::string sums) {
      return [name, sums](const std::string& precision) {
        return CpuLibraryKernel{name + "-backward:" + precision,
                                sums + ", the elementwise gradient in " + precision,
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
        {"aten.addmm", biasedGemmKernel, &addmm<float>, &addmm<double>},
        {"aten.bmm", gemmKernel, &bmm<float>, &bmm<double>},
        {"aten.convolution",
         [](const std::string& precision) { return convolutionKernel(precision, false); },
         &anyRankConvolution<convolution2d<float>>, &anyRankConvolution<convolution2d<double>>},
        {"aten.convolution_backward",
         [](const std::string& precision) { return convolutionKernel(precision, true); },
         &anyRankConvolution<convolution2dBackward<float>>,
         &anyRankConvolution<convolution2dBackward<double>>},
        {"aten.max_pool2d_with_indices",
         inPrecision("max-pool", "window maximum",
                     "pooling windows are not a reduction the code generator "
                     "handles"),
         &maxPool2d<float>, &maxPool2d<double>, std::nullopt, 1},
        {"aten.max_pool2d_with_indices_backward",
         inPrecision("max-pool-backward", "scatter of each gradient to its argmax",
                     "a scatter is not a kernel the code generator handles"),
         &maxPool2dBackward<float>, &maxPool2dBackward<double>, 2},
        {"aten.avg_pool2d",
         inPrecision("avg-pool", "window sums",
                     "pooling windows are not a reduction the code generator handles"),
         &avgPool2d<float>, &avgPool2d<double>},
        {"aten.avg_pool2d_backward",
         inPrecision("avg-pool-backward", "each gradient's share spread over its window",
                     "a scatter over overlapping windows is not a kernel the code generator "
                     "handles"),
         &avgPool2dBackward<float>, &avgPool2dBackward<double>},
        {"aten._adaptive_avg_pool2d",
         inPrecision("adaptive-avg-pool", "cell sums",
                     "pooling windows are not a reduction the code generator handles"),
         &adaptiveAvgPool2d<float>, &adaptiveAvgPool2d<double>},
        {"aten._adaptive_avg_pool2d_backward",
         inPrecision("adaptive-avg-pool-backward", "each gradient's share spread over its cell",
                     "a scatter over cells is not a kernel the code generator handles"),
         &adaptiveAvgPool2dBackward<float>, &adaptiveAvgPool2dBackward<double>},
        {"aten.native_batch_norm_backward", normBackward("batch-norm", "sums in double"),
         &batchNormBackward<float>, &batchNormBackward<double>},
        {"aten.native_layer_norm_backward",
         normBackward("layer-norm", "row sums in the input's precision, the weight's and bias's "
                                    "gradients in it over blocks of rows and then in double"),
         &layerNormBackward<float>, &layerNormBackward<double>},
        {"aten.embedding",
         inPrecision("embedding", "row copies",
                     "a gather of rows is not a kernel the code generator handles"),
         &embedding<float>, &embedding<double>, 1},
        {"aten.embedding_dense_backward",
         inPrecision("embedding-backward", "row sums",
                     "a scatter-add of rows is not a kernel the code generator handles"),
         &embeddingDenseBackward<float>, &embeddingDenseBackward<double>, 1},
        {"aten.native_dropout",
         inPrecision("dropout", "masks hashed from their stream positions, in parallel",
                     "a random draw is not an op the code generator handles"),
         &dropout<float>, &dropout<double>, std::nullopt, 1, DType::Bool},
        {"aten._scaled_dot_product_flash_attention_for_cpu", attentionKernel(""), &attention<float>,
         &attention<double>},
        {"aten._scaled_dot_product_flash_attention_for_cpu_backward", attentionKernel("-backward"),
         &attentionBackward<float>, &attentionBackward<double>},
    };
    for (const char* op : {"aten._native_batch_norm_legit_functional", "aten.native_batch_norm",
                           "aten._native_batch_norm_legit.no_stats"})
      table.push_back({op, batchNormKernel, &batchNorm<float>, &batchNorm<double>});
    // In inference batch norm is a per-channel scale and shift: decomposed, it fuses with the
    // activation after it (docs/cpu-codegen.md, "Library kernels").
    table.push_back({"aten._native_batch_norm_legit_no_training",
                     [batchNormKernel](const std::string& precision) {
                       CpuLibraryKernel kernel = batchNormKernel(precision);
                       kernel.decompositionFirst = true;
                       return kernel;
                     },
                     &batchNorm<float>, &batchNorm<double>});
    return table;
  }();
  return kernels;
}

const FloatKernel* findFloatKernel(const std::string& op) {
  auto kernel = std::find_if(floatKernels().begin(), floatKernels().end(),
                             [&](const FloatKernel& k) { return op == k.op; });
  return kernel == floatKernels().end() ? nullptr : &*kernel;
}

// A 1-D or 2-D convolution: its input's rank (the forward's first operand, the backward's
// second). 3-D convolutions run the reference.
size_t convolutionRank(const Node& node) {
  return node.operand(node.op() == "aten.convolution" ? 0 : 1)->tensorType().rank();
}

bool hasConvolutionKernel(const Node& node) {
  size_t rank = convolutionRank(node);
  return rank == 3 || rank == 4;
}

// The values of an attribute's dims, or nothing if one is symbolic.
std::optional<std::vector<int64_t>> constantDims(const AttrMap& attrs, const char* name) {
  std::vector<int64_t> values;
  for (const SymExpr& d : attrs.getDims(name)) {
    std::optional<int64_t> value = d.constant();
    if (!value) return std::nullopt;
    values.push_back(*value);
  }
  return values;
}

// What isDepthwiseConvolution and isPointwiseConvolution say of a plain 2-D convolution's
// geometry at run time, from the node's static sizes and attributes (a dim they read that is
// symbolic: no).
bool isDepthwiseConvolutionNode(const Node& node) {
  if (!hasConvolutionKernel(node) || node.attrs().getBool("transposed", false)) return false;
  std::optional<int64_t> channels = node.operand(0)->tensorType().shape[1].constant();
  std::optional<int64_t> groupChannels = node.operand(1)->tensorType().shape[1].constant();
  return channels && groupChannels &&
         isDepthwise(*channels, *groupChannels, node.attrs().getInt("groups", 1));
}

bool isPointwiseConvolutionNode(const Node& node) {
  if (!hasConvolutionKernel(node) || node.attrs().getBool("transposed", false)) return false;
  const Shape& weight = node.operand(1)->tensorType().shape;
  bool oneD = weight.size() == 3; // a unit height (anyRankConvolution)
  std::optional<int64_t> kh = oneD ? 1 : weight[2].constant(), kw = weight[oneD ? 2 : 3].constant();
  auto stride = constantDims(node.attrs(), "stride");
  auto padding = constantDims(node.attrs(), "padding");
  return kh && kw && stride && padding && isPointwise(*kh, *kw, *stride, *padding);
}

bool hasDType(const Value* value, DType expected) {
  return value->type().isTensor() && value->tensorType().dtype == expected;
}

// aten.copy (what a functionalized copy_ becomes: an optimizer step's parameter updates) of a
// source of self's shape and dtype is the same copy as a clone; one that broadcasts or converts
// runs the reference.
bool isPlainCopy(const Node& node) {
  if (node.op() != "aten.copy") return false;
  const TensorType& self = node.operand(0)->tensorType();
  const TensorType& src = node.operand(1)->tensorType();
  return self.shape == src.shape && self.dtype == src.dtype;
}

// The ops findCopyKernel decides for.
bool isCopyOp(const std::string& op) {
  return op == "aten.clone" || op == "aten.lift_fresh_copy" || op == "aten.copy" ||
         op == "aten.cat";
}

// Copies in the tensors' own dtype, any dtype: clone (and lift_fresh_copy, a plain copy), cat.
std::optional<CpuLibraryKernel> findCopyKernel(const Node& node, std::string* whyNot) {
  if (node.op() == "aten.clone" || node.op() == "aten.lift_fresh_copy" || isPlainCopy(node))
    return CpuLibraryKernel{"copy", "a memcpy, or a strided copy in the tensor's own dtype",
                            "a copy needs no generated code"};
  if (node.op() == "aten.copy") {
    if (whyNot) *whyNot = "aten.copy broadcasts or converts its source";
    return std::nullopt;
  }
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

// Ops whose runtime implementation in the op registry already runs at library speed in the
// tensor's own dtype, run as it under a library kernel's name so that the trace does not call
// them reference code: a fill of one value (fillsOneValue: the value converted once, its bytes
// copied, Tensor::fill) and slice_backward and select_backward (zeros so, then
// grad_output copied into the forward view's elements, a memcpy or a strided byte copy).
bool isViewBackward(const std::string& op) {
  return op == "aten.slice_backward" || op == "aten.select_backward";
}

bool runsAsFill(const Node& node) {
  return fillsOneValue(node.op()) || isViewBackward(node.op());
}

std::optional<CpuLibraryKernel> findFillKernel(const Node& node) {
  if (fillsOneValue(node.op()))
    return CpuLibraryKernel{"fill", "the value converted to the dtype once, then its bytes copied",
                            "a constant needs no generated code"};
  if (isViewBackward(node.op()))
    return CpuLibraryKernel{"view-backward",
                            "zeros filled at copy speed, then grad_output copied into the forward "
                            "view's elements in its own dtype (a memcpy or a strided byte copy)",
                            "a copy needs no generated code"};
  return std::nullopt;
}

// The checked gather and torch's unchecked form, which this kernel checks too.
bool isGatherOp(const std::string& op) {
  return op == "aten.index.Tensor" || op == "aten._unsafe_index.Tensor";
}

// Advanced indexing (library/advanced_indexing.h): a gather or a write of elements, in any
// dtype; index_put's accumulate adds, in the dtypes that have a sum here.
std::optional<CpuLibraryKernel> findIndexingKernel(const Node& node, std::string* whyNot) {
  const char* whyNotGenerated = "the code generator reads gathers only inside the pointwise "
                                "kernel that consumes them (an in-place _unsafe_index), and "
                                "writes no scatter";
  if (isGatherOp(node.op()))
    return CpuLibraryKernel{"gather",
                            "offset tables from the index tensors, then runs of "
                            "elements copied in the tensor's own dtype",
                            whyNotGenerated};
  DType dtype = node.result(0)->tensorType().dtype;
  if (node.attrs().getBool("accumulate", false) && !indexPutAdds(dtype)) {
    if (whyNot) *whyNot = "index_put accumulates in f32, f64, i32 or i64 only";
    return std::nullopt;
  }
  return CpuLibraryKernel{node.attrs().getBool("accumulate", false) ? "scatter-add" : "scatter",
                          "offset tables from the index tensors, then the values written (or "
                          "added) in the tensor's own dtype",
                          whyNotGenerated};
}

// A max pooling whose indices nothing reads (an inference graph): its kernel writes the maxima
// only.
bool onlyMaximaRead(const Node& node) {
  return node.op() == "aten.max_pool2d_with_indices" && !node.result(1)->hasUses();
}

} // namespace

std::optional<CpuLibraryKernel> findCpuLibraryKernel(const Node& node, std::string* whyNot) {
  auto no = [&](std::string why) -> std::optional<CpuLibraryKernel> {
    if (whyNot) *whyNot = std::move(why);
    return std::nullopt;
  };
  const std::string& op = node.op();
  if (isCopyOp(op)) return findCopyKernel(node, whyNot);
  if (isGatherOp(op) || op == "aten.index_put") return findIndexingKernel(node, whyNot);
  if (auto fill = findFillKernel(node)) return fill;
  const FloatKernel* kernel = findFloatKernel(op);
  if (!kernel) return no("no library kernel for " + op);
  if (!node.numResults() || !node.result(0)->type().isTensor())
    return no(op + " has no tensor result");
  DType dtype = node.result(0)->tensorType().dtype;
  if (!isBlasDType(dtype) && !isReducedFloat(dtype))
    return no("library kernels compute in f32 or f64 (bf16 and f16 through f32) only, not " +
              std::string(dtypeName(dtype)));
  for (size_t i = 0; i < node.numOperands(); ++i)
    if (const Value* operand = node.operand(i);
        operand && !hasDType(operand, kernel->indexOperand == i ? kernel->indexDType : dtype))
      return no(kernel->indexOperand == i
                    ? "the indices operand must be " + std::string(dtypeName(kernel->indexDType))
                    : "library kernels need every operand in the result's dtype");
  for (size_t i = 0; i < node.numResults(); ++i)
    if (!hasDType(node.result(i), kernel->indexResult == i ? kernel->indexDType : dtype))
      return no("library kernels need every result in the first result's dtype");
  if (op.starts_with("aten.convolution") && !hasConvolutionKernel(node))
    return no("only 1-D and 2-D convolutions have a library kernel");
  // bf16 and f16 run the f32 kernel on widened copies (library/reduced_float.h).
  std::string precision(dtypeName(isReducedFloat(dtype) ? DType::F32 : dtype));
  CpuLibraryKernel chosen = kernel->describe(precision);
  if (op == "aten.convolution" && isDepthwiseConvolutionNode(node)) {
    chosen.implementation = "depthwise:" + precision;
    chosen.reason = "a depthwise convolution: each output plane its input plane's taps weighted "
                    "and summed in NCHW, a vector multiply-add per row and tap; oneDNN, the "
                    "alternative, reorders into channel blocks and back: 1.7x torch's time at "
                    "[16,64,56,56]";
  }
  if (op == "aten.convolution" && isPointwiseConvolutionNode(node)) {
    chosen.implementation = "1x1-gemm";
    chosen.reason = "a 1x1 convolution with stride 1 and no padding: one BLAS gemm per image and "
                    "group on the input as it is (no columns unfolded, no layout reorder); "
                    "oneDNN in NCHW, the alternative, measured 3.5x slower at [16,64,56,56]";
  }
  if (op.starts_with("aten.convolution") && node.attrs().getBool("transposed", false))
    chosen.reason += "; transposed, as the adjoint of the plain convolution from its output's "
                     "space (the forward that convolution's input gradient, the input gradient "
                     "its forward)";
  if (onlyMaximaRead(node)) {
    chosen.implementation = "max-pool-values:" + precision;
    chosen.reason += ", the maxima only: nothing reads the indices";
  }
  bool oneDnnProduct = runsAsOneDnnMatmul(node);
  if (oneDnnProduct && dtype == DType::F32)
    return CpuLibraryKernel{"onednn:matmul:f32",
                            "oneDNN's f32 matmul (its brgemm kernels), the bias added in its "
                            "epilogue; OpenBLAS's sgemm where oneDNN has only its reference loop "
                            "for the operands' layouts",
                            "no generated matmul; OpenBLAS's sgemm, the alternative, took 1.00 ms "
                            "against 0.64 for a [64,2048] by [2048,512] linear on 2 threads, "
                            "slower at every MLP, BERT and GPT-2 size measured"};
  if (oneDnnProduct)
    return CpuLibraryKernel{"onednn:matmul:bf16",
                            "oneDNN's bf16 matmul (its brgemm kernels, the CPU's bf16 dot "
                            "products), accumulated in f32 and rounded once to bf16, as torch's; "
                            "the bias added in its epilogue",
                            "no generated matmul; through f32, the alternative, widens the "
                            "operands on every call and runs the f32 gemm: 5.6 ms against 1.5 "
                            "for a [64,1024] by [1024,4096] linear on 2 threads"};
  if (isReducedFloat(dtype)) {
    std::string name(dtypeName(dtype));
    chosen.implementation += " via f32";
    chosen.reason += "; the " + name + " operands widened to f32, the results rounded back to " +
                     name + " (torch's CPU kernels accumulate " + name + " in f32 too)";
  }
  return chosen;
}

bool cpuLibraryHasOneDnn() {
  return kOneDnnBuiltIn;
}

bool cpuLibraryHasBf16Matmul() {
#ifdef LOUPE_HAVE_ONEDNN
  return oneDnnHasMatmul(DType::BF16);
#else
  return false;
#endif
}

bool cpuLibraryHasF32Matmul() {
#ifdef LOUPE_HAVE_ONEDNN
  return oneDnnHasMatmul(DType::F32);
#else
  return false;
#endif
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

namespace {

bool anyReducedFloat(const std::vector<const Tensor*>& inputs, const std::vector<Tensor>& outputs) {
  return std::any_of(inputs.begin(), inputs.end(),
                     [](const Tensor* t) { return t && isReducedFloat(t->dtype()); }) ||
         std::any_of(outputs.begin(), outputs.end(),
                     [](const Tensor& t) { return isReducedFloat(t.dtype()); });
}

// A float kernel on bf16 or f16 tensors: the same kernel on f32 copies of them, its results of
// those dtypes rounded back (library/reduced_float.h); tensors of other dtypes (indices, masks)
// are passed as they are.
void runThroughF32(const Node& node, const AttrMap& attrs, const std::vector<const Tensor*>& inputs,
                   std::vector<Tensor>& outputs) {
  std::vector<Tensor> widened;
  widened.reserve(inputs.size());
  std::vector<const Tensor*> wideInputs;
  for (const Tensor* t : inputs)
    wideInputs.push_back(t && isReducedFloat(t->dtype()) ? &widened.emplace_back(widenedToF32(*t))
                                                         : t);
  std::vector<Tensor> wideOutputs;
  for (const Tensor& out : outputs)
    wideOutputs.push_back(isReducedFloat(out.dtype()) ? Tensor::empty(DType::F32, out.shape())
                                                      : out);
  runCpuLibraryKernel(node, attrs, wideInputs, wideOutputs);
  for (size_t i = 0; i < outputs.size(); ++i)
    if (isReducedFloat(outputs[i].dtype())) narrowInto(wideOutputs[i], outputs[i]);
}

} // namespace

void runCpuLibraryKernel(const Node& node, const AttrMap& attrs,
                         const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const std::string& op = node.op();
  if (op == "aten.clone" || op == "aten.lift_fresh_copy") {
    outputs[0].copyFrom(*inputs[0]);
    return;
  }
  if (op == "aten.copy") { // isPlainCopy: the source has the result's shape and dtype
    outputs[0].copyFrom(*inputs[1]);
    return;
  }
  if (op == "aten.cat") {
    concatenate(inputs, attrs, outputs[0]);
    return;
  }
  if (isGatherOp(op)) {
    indexGather(inputs, outputs[0]);
    return;
  }
  if (op == "aten.index_put") {
    indexPut(inputs, attrs.getBool("accumulate", false), outputs[0]);
    return;
  }
  if (runsAsFill(node)) { // the check alone: findFillKernel builds the trace's text
    OpRegistry::global().find(op)->reference(inputs, attrs, outputs);
    return;
  }
  if (runsAsOneDnnMatmul(node) && oneDnnProduct(node, inputs, outputs)) return;
  if (anyReducedFloat(inputs, outputs)) return runThroughF32(node, attrs, inputs, outputs);
  if (onlyMaximaRead(node)) {
    if (outputs[0].dtype() == DType::F64)
      maxPool2d<double>(inputs, attrs, outputs, false);
    else
      maxPool2d<float>(inputs, attrs, outputs, false);
    return;
  }
  const FloatKernel* kernel = findFloatKernel(op);
  if (!kernel)
    throw Error("runtime", "no library kernel for " + op, ErrorContext{.node = node.describe()});
  (outputs[0].dtype() == DType::F64 ? kernel->f64 : kernel->f32)(inputs, attrs, outputs);
}

} // namespace loupe
