// aten.convolution and aten.convolution_backward for 1-D ([N, C, L]) and 2-D ([N, C, H, W])
// inputs, with stride, padding, dilation and groups, plain or transposed. The output size per
// spatial dim is (in + 2p - d(k-1) - 1) // s + 1, symbolic in the input size; transposed,
// (in - 1)s - 2p + d(k-1) + output_padding + 1.
//
// A transposed convolution is the adjoint of the plain convolution that maps its output's space
// to its input's, with the same weight ([C_in, C_out / groups, kernel...] is that convolution's
// [filters, channels / groups, kernel...]): its forward is that convolution's input gradient, its
// input gradient that convolution's forward, its weight gradient that convolution's weight
// gradient with the two spaces swapped. The references and the CPU library kernels compute it so.
//
// The reference treats a 1-D convolution as a 2-D one with a height of 1, and forward and
// backward walk the same (input, weight, output) index triples, so their conventions agree.
#include <algorithm>
#include <array>
#include <functional>

#include "compiler/ir/error.h"
#include "compiler/ops/op_registry.h"
#include "compiler/ops/pointwise.h"

namespace loupe {
namespace {

// Per-spatial-dim attribute lists; one value stands for every dim, as torch allows.
std::vector<int64_t> spatialAttr(const AttrMap& attrs, std::string_view name, size_t spatial,
                                 const std::string& op) {
  std::vector<int64_t> values = attrs.getInts(name);
  if (values.size() == 1) values.resize(spatial, values[0]);
  if (values.size() != spatial)
    throw Error("shape", op + ": " + std::string(name) + " needs " + std::to_string(spatial) +
                             " values, found " + std::to_string(values.size()));
  return values;
}

struct ConvOptions {
  std::vector<int64_t> stride, padding, dilation, outputPadding;
  int64_t groups;
  bool transposed;

  ConvOptions(const AttrMap& attrs, size_t spatial, const std::string& op)
      : stride(spatialAttr(attrs, "stride", spatial, op)),
        padding(spatialAttr(attrs, "padding", spatial, op)),
        dilation(spatialAttr(attrs, "dilation", spatial, op)), groups(attrs.getInt("groups")),
        transposed(attrs.getBool("transposed")) {
    outputPadding = transposed ? spatialAttr(attrs, "output_padding", spatial, op)
                               : std::vector<int64_t>(spatial, 0);
    if (groups <= 0) throw Error("shape", op + ": groups must be positive");
    for (size_t i = 0; i < spatial; ++i) {
      if (stride[i] <= 0 || dilation[i] <= 0 || padding[i] < 0)
        throw Error("shape", op + ": stride and dilation must be positive, padding non-negative");
      // torch's rule: the extra rows must be fewer than the stride or the dilation.
      if (outputPadding[i] < 0 || outputPadding[i] >= std::max(stride[i], dilation[i]))
        throw Error("shape", op + ": output_padding " + std::to_string(outputPadding[i]) +
                                 " must be smaller than the stride or the dilation");
    }
  }
};

// The bias's shape: one per output channel.
Shape channelShape(const TensorType& weight, const AttrMap& attrs) {
  if (attrs.getBool("transposed")) return {weight.shape[1] * attrs.getInt("groups")};
  return {weight.shape[0]};
}

// Checks input [N, C_in, spatial...] against weight ([C_out, C_in / groups, kernel...], or
// transposed [C_in, C_out / groups, kernel...]) and returns the output shape.
Shape convOutputShape(const TensorType& input, const TensorType& weight, const AttrMap& attrs,
                      const std::string& op) {
  if (input.rank() != 3 && input.rank() != 4)
    throw Error("shape", op + ": input must be 3-D (N, C, L) or 4-D (N, C, H, W), got [" +
                             shapeStr(input.shape) + "]");
  if (weight.rank() != input.rank())
    throw Error("shape", op + ": weight [" + shapeStr(weight.shape) +
                             "] must have the rank of input [" + shapeStr(input.shape) + "]");
  size_t spatial = input.rank() - 2;
  ConvOptions options(attrs, spatial, op);
  // The weight's dim that counts the input's channels (per group, unless transposed), and the
  // one that counts the output's.
  const SymExpr& inputChannels = weight.shape[options.transposed ? 0 : 1];
  SymExpr expected = options.transposed ? inputChannels : inputChannels * options.groups;
  if (input.shape[1] != expected)
    throw Error("shape", op + ": input has " + input.shape[1].str() + " channels but " +
                             (options.transposed ? "transposed " : "") + "weight [" +
                             shapeStr(weight.shape) + "] with groups=" +
                             std::to_string(options.groups) + " expects " + expected.str());
  if (auto grouped = weight.shape[0].constant(); grouped && *grouped % options.groups)
    throw Error("shape",
                op + ": " + std::to_string(*grouped) + (options.transposed ? " input" : " output") +
                    " channels are not divisible by groups=" + std::to_string(options.groups));
  Shape out = {input.shape[0], channelShape(weight, attrs)[0]};
  for (size_t i = 0; i < spatial; ++i) {
    const SymExpr& in = input.shape[2 + i];
    const SymExpr& k = weight.shape[2 + i];
    int64_t p = options.padding[i], d = options.dilation[i], st = options.stride[i];
    out.push_back(options.transposed
                      ? (in - 1) * st - 2 * p + d * (k - 1) + options.outputPadding[i] + 1
                      : SymExpr::floorDiv(in + 2 * p - d * (k - 1) - 1, st) + 1);
    if (auto size = out.back().constant(); size && *size <= 0)
      throw Error("shape", op + ": input [" + shapeStr(input.shape) + "] is smaller than kernel [" +
                               shapeStr(weight.shape) + "] after padding");
  }
  return out;
}

std::vector<Type> inferConvolution(const std::vector<const Type*>& operands, const AttrMap& attrs) {
  const std::string op = "aten.convolution";
  const TensorType& input = tensorOperand(operands, 0, op);
  const TensorType& weight = tensorOperand(operands, 1, op);
  Shape out = convOutputShape(input, weight, attrs, op);
  if (operands.size() > 2 && operands[2] &&
      operands[2]->tensor().shape != channelShape(weight, attrs))
    throw Error("shape", op + ": bias [" + shapeStr(operands[2]->tensor().shape) + "] must be [" +
                             shapeStr(channelShape(weight, attrs)) + "]");
  return {input.withShape(out)};
}

// Concrete geometry of one convolution, 1-D viewed as 2-D with height 1.
struct ConvGeometry {
  int64_t batch, inChannels, inH, inW, outChannels, outH, outW, kH, kW;
  std::array<int64_t, 2> stride, padding, dilation;
  int64_t groups;

  ConvGeometry(const Tensor& input, const Tensor& weight, const Tensor& output,
               const AttrMap& attrs) {
    bool is1d = input.rank() == 3;
    auto last = [](const Tensor& t, size_t fromEnd) { return t.size(t.rank() - fromEnd); };
    ConvOptions o(attrs, input.rank() - 2, "aten.convolution");
    auto pair = [&](const std::vector<int64_t>& v, int64_t heightValue) {
      return is1d ? std::array<int64_t, 2>{heightValue, v[0]} : std::array<int64_t, 2>{v[0], v[1]};
    };
    batch = input.size(0);
    inChannels = input.size(1);
    outChannels = weight.size(0);
    inH = is1d ? 1 : last(input, 2);
    inW = last(input, 1);
    kH = is1d ? 1 : last(weight, 2);
    kW = last(weight, 1);
    outH = is1d ? 1 : last(output, 2);
    outW = last(output, 1);
    stride = pair(o.stride, 1);
    padding = pair(o.padding, 0);
    dilation = pair(o.dilation, 1);
    groups = o.groups;
  }

  // visit(inputIndex, weightIndex, outputIndex) for every product term of the convolution sum
  // whose input position lies inside the (unpadded) input.
  void forEachTap(const std::function<void(int64_t, int64_t, int64_t)>& visit) const {
    int64_t inPerGroup = inChannels / groups, outPerGroup = outChannels / groups;
    for (int64_t n = 0; n < batch; ++n)
      for (int64_t oc = 0; oc < outChannels; ++oc)
        for (int64_t icg = 0; icg < inPerGroup; ++icg) {
          int64_t ic = (oc / outPerGroup) * inPerGroup + icg;
          for (int64_t oh = 0; oh < outH; ++oh)
            for (int64_t ow = 0; ow < outW; ++ow)
              for (int64_t kh = 0; kh < kH; ++kh) {
                int64_t ih = oh * stride[0] - padding[0] + kh * dilation[0];
                if (ih < 0 || ih >= inH) continue;
                for (int64_t kw = 0; kw < kW; ++kw) {
                  int64_t iw = ow * stride[1] - padding[1] + kw * dilation[1];
                  if (iw < 0 || iw >= inW) continue;
                  visit(((n * inChannels + ic) * inH + ih) * inW + iw,
                        ((oc * inPerGroup + icg) * kH + kh) * kW + kw,
                        ((n * outChannels + oc) * outH + oh) * outW + ow);
                }
              }
        }
  }

  int64_t channelOf(int64_t outputIndex) const { return outputIndex / (outH * outW) % outChannels; }
  int64_t inputChannelOf(int64_t inputIndex) const { return inputIndex / (inH * inW) % inChannels; }
};

void store(Tensor& out, const std::vector<double>& values) {
  for (int64_t i = 0; i < out.numel(); ++i)
    out.set(i, values[static_cast<size_t>(i)]);
}

bool isTransposed(const AttrMap& attrs) {
  return attrs.getBool("transposed");
}

void convolutionReference(const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
                          std::vector<Tensor>& outputs) {
  bool transposed = isTransposed(attrs);
  // Transposed: the plain convolution from the output's space (its input) to the input's.
  ConvGeometry g = transposed ? ConvGeometry(outputs[0], *inputs[1], *inputs[0], attrs)
                              : ConvGeometry(*inputs[0], *inputs[1], outputs[0], attrs);
  std::vector<double> x = inputs[0]->toDoubles(), w = inputs[1]->toDoubles();
  std::vector<double> out(static_cast<size_t>(outputs[0].numel()), 0.0);
  if (inputs.size() > 2 && inputs[2]) {
    std::vector<double> bias = inputs[2]->toDoubles();
    for (size_t i = 0; i < out.size(); ++i) {
      auto at = static_cast<int64_t>(i);
      out[i] = bias[static_cast<size_t>(transposed ? g.inputChannelOf(at) : g.channelOf(at))];
    }
  }
  if (transposed)
    g.forEachTap([&](int64_t in, int64_t wi, int64_t o) {
      out[static_cast<size_t>(in)] += x[static_cast<size_t>(o)] * w[static_cast<size_t>(wi)];
    });
  else
    g.forEachTap([&](int64_t in, int64_t wi, int64_t o) {
      out[static_cast<size_t>(o)] += x[static_cast<size_t>(in)] * w[static_cast<size_t>(wi)];
    });
  store(outputs[0], out);
}

std::vector<Type> inferConvolutionBackward(const std::vector<const Type*>& operands,
                                           const AttrMap& attrs) {
  const std::string op = "aten.convolution_backward";
  const TensorType& gradOut = tensorOperand(operands, 0, op);
  const TensorType& input = tensorOperand(operands, 1, op);
  const TensorType& weight = tensorOperand(operands, 2, op);
  Shape out = convOutputShape(input, weight, attrs, op);
  if (gradOut.shape != out)
    throw Error("shape", op + ": grad_output has shape [" + shapeStr(gradOut.shape) +
                             "], the convolution produces [" + shapeStr(out) + "]");
  // bias_sizes [0] is how aot_autograd says "the convolution had no bias".
  if (!attrs.isNone("bias_sizes") && attrs.getDims("bias_sizes") != IntList{SymExpr(0)} &&
      attrs.getDims("bias_sizes") != channelShape(weight, attrs))
    throw Error("shape", op + ": bias_sizes [" + shapeStr(attrs.getDims("bias_sizes")) +
                             "] must be [" + shapeStr(channelShape(weight, attrs)) + "]");
  if (attrs.getBools("output_mask").size() != 3)
    throw Error("shape", op + ": output_mask needs 3 values");
  // The gradients are new tensors, row-major whatever the layout of input and weight (torch's
  // meta function allocates them with new_empty); where aot_autograd's graph wants another
  // layout, the converter repacks the row-major result.
  return {input.withShape(input.shape), weight.withShape(weight.shape),
          gradOut.withShape(channelShape(weight, attrs))};
}

// Results whose output_mask entry is false are produced as zeros (torch returns None there).
void convolutionBackwardReference(const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
                                  std::vector<Tensor>& outputs) {
  const Tensor &gradOutT = *inputs[0], &inputT = *inputs[1], &weightT = *inputs[2];
  bool transposed = isTransposed(attrs);
  ConvGeometry g = transposed ? ConvGeometry(gradOutT, weightT, inputT, attrs)
                              : ConvGeometry(inputT, weightT, gradOutT, attrs);
  BoolList mask = attrs.getBools("output_mask");
  std::vector<double> gradOut = gradOutT.toDoubles(), x = inputT.toDoubles(),
                      w = weightT.toDoubles();
  std::vector<std::vector<double>> grads;
  for (const Tensor& t : outputs)
    grads.emplace_back(static_cast<size_t>(t.numel()), 0.0);
  // A tap's (in, o) index the plain convolution's input and output; transposed, the gradient
  // is at `in` and the input at `o`.
  g.forEachTap([&](int64_t in, int64_t wi, int64_t o) {
    size_t gradAt = static_cast<size_t>(transposed ? in : o);
    size_t inputAt = static_cast<size_t>(transposed ? o : in);
    double go = gradOut[gradAt];
    if (mask[0]) grads[0][inputAt] += go * w[static_cast<size_t>(wi)];
    if (mask[1]) grads[1][static_cast<size_t>(wi)] += go * x[inputAt];
  });
  if (mask[2])
    for (size_t o = 0; o < gradOut.size(); ++o) {
      auto at = static_cast<int64_t>(o);
      grads[2][static_cast<size_t>(transposed ? g.inputChannelOf(at) : g.channelOf(at))] +=
          gradOut[o];
    }
  for (size_t i = 0; i < outputs.size(); ++i)
    store(outputs[i], grads[i]);
}

} // namespace

void registerConvolutionOps(OpRegistry& registry) {
  const std::vector<AttrSpec> convAttrs = {
      {"stride", std::nullopt},     {"padding", std::nullopt},        {"dilation", std::nullopt},
      {"transposed", std::nullopt}, {"output_padding", std::nullopt}, {"groups", std::nullopt}};

  OpInfo conv;
  conv.name = "aten.convolution";
  conv.kind = OpKind::Convolution;
  conv.operands = {{"input"}, {"weight"}, {"bias", true}};
  conv.attrs = convAttrs;
  conv.summary =
      "1-D/2-D convolution with stride, padding, dilation and groups, plain or transposed";
  conv.infer = inferConvolution;
  conv.reference = convolutionReference;
  registry.add(std::move(conv));

  OpInfo backward;
  backward.name = "aten.convolution_backward";
  backward.kind = OpKind::Convolution;
  backward.operands = {{"grad_output"}, {"input"}, {"weight"}};
  backward.attrs = convAttrs;
  backward.attrs.insert(backward.attrs.begin(), AttrSpec{"bias_sizes", std::nullopt});
  backward.attrs.push_back({"output_mask", std::nullopt});
  backward.numResults = 3;
  backward.summary =
      "gradients of aten.convolution: (grad_input, grad_weight, grad_bias); masked-off "
      "results are zeros";
  backward.infer = inferConvolutionBackward;
  backward.reference = convolutionBackwardReference;
  registry.add(std::move(backward));
}

} // namespace loupe
