#include "compiler/codegen/cpu/library/onednn_convolution.h"

#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "compiler/codegen/cpu/library/onednn_common.h"
#include "compiler/codegen/cpu/library/parallel_gemm.h"
#include "compiler/codegen/cpu/library/scratch.h"
#include "compiler/ir/error.h"

namespace loupe::library {

namespace {

using namespace onednn;
using dnnl::memory;
using Dims = memory::dims;
constexpr memory::data_type kF32 = memory::data_type::f32;

// A tensor as oneDNN reads it in place: its dims and strides. A broadcast (zero-stride) dim is
// packed first, as oneDNN wants every dim laid out.
Tensor denseLayout(const Tensor& t) {
  for (size_t d = 0; d < t.rank(); ++d)
    if (t.size(d) > 1 && t.strides()[d] <= 0) return t.contiguous();
  return t;
}

memory::desc plainDesc(const Tensor& t) {
  return memory::desc(t.shape(), kF32, t.strides());
}

// The weight of a grouped convolution is [groups, filters / groups, channels / groups, kh, kw]
// to oneDNN: the same memory with its first dim split.
memory::desc weightDesc(const Conv2dGeometry& g, const Tensor& w) {
  if (g.groups == 1) return plainDesc(w);
  const std::vector<int64_t>& s = w.strides();
  return memory::desc({g.groups, g.groupFilters(), g.groupChannels, g.kh, g.kw}, kF32,
                      {g.groupFilters() * s[0], s[0], s[1], s[2], s[3]});
}

memory::desc contiguousDesc(const Dims& dims) {
  return memory::desc(dims, kF32,
                      dims.size() == 1 ? memory::format_tag::a : memory::format_tag::abcd);
}

// The primitive picks its own layout for every operand (format `any`), as torch's does.
memory::desc anyLayout(const memory::desc& d) {
  return memory::desc(d.dims(), kF32, memory::format_tag::any);
}

// The window in oneDNN's terms: dilation counts the gaps (torch's minus one), and the padding
// after the input is whatever makes the output size torch's (negative where the last window
// stops short of the input's end).
struct Window {
  Dims strides, dilates, before, after;
  explicit Window(const Conv2dGeometry& g)
      : strides(g.stride), dilates{g.dilation[0] - 1, g.dilation[1] - 1},
        before(g.padding), after{(g.outH - 1) * g.stride[0] + (g.kh - 1) * g.dilation[0] + 1 -
                                     g.height - g.padding[0],
                                 (g.outW - 1) * g.stride[1] + (g.kw - 1) * g.dilation[1] + 1 -
                                     g.width - g.padding[1]} {}
};

// One operand of a primitive: the caller's layout, the primitive's, and the reorder between them
// (into the primitive's for an input, out of it for a result), absent where the two agree.
struct Operand {
  memory::desc user, inner;
  std::optional<dnnl::reorder> convert;

  static Operand input(const memory::desc& user, const memory::desc& inner) {
    return {user, inner, reorderBetween(user, inner)};
  }
  static Operand output(const memory::desc& user, const memory::desc& inner) {
    return {user, inner, reorderBetween(inner, user)};
  }

private:
  static std::optional<dnnl::reorder> reorderBetween(const memory::desc& from,
                                                     const memory::desc& to) {
    if (from == to) return std::nullopt;
    return dnnl::reorder(dnnl::reorder::primitive_desc(cpuEngine(), from, cpuEngine(), to));
  }
};

// One call's primitives on one stream: inputs reordered in before, results reordered out at
// finish(), every intermediate buffer a Scratch that lives as long as the call.
class Call {
public:
  Call() : stream_(cpuEngine()) {}

  memory input(const Operand& operand, const Tensor& data) {
    memory user(operand.user, cpuEngine(), data.data());
    if (!operand.convert) return user;
    memory inner = buffer(operand.inner);
    operand.convert->execute(stream_, user, inner);
    return inner;
  }

  memory output(const Operand& operand, const Tensor& data) {
    memory user(operand.user, cpuEngine(), data.data());
    if (!operand.convert) return user;
    memory inner = buffer(operand.inner);
    pending_.push_back({&*operand.convert, inner, user});
    return inner;
  }

  memory buffer(const memory::desc& desc) {
    buffers_.emplace_back(static_cast<int64_t>(desc.get_size()));
    return memory(desc, cpuEngine(), buffers_.back().data());
  }

  void execute(const dnnl::primitive& primitive, const std::unordered_map<int, memory>& args) {
    primitive.execute(stream_, args);
  }

  void finish() {
    for (Pending& p : pending_)
      p.convert->execute(stream_, p.inner, p.user);
    stream_.wait();
  }

private:
  struct Pending {
    const dnnl::reorder* convert;
    memory inner, user;
  };
  dnnl::stream stream_;
  std::deque<Scratch<uint8_t>> buffers_;
  std::vector<Pending> pending_;
};

// What identifies a plan: the direction, the threads, the window and every operand's layout.
Dims planKey(int64_t direction, const Conv2dGeometry& g, std::initializer_list<const Tensor*> ts,
             std::initializer_list<int64_t> flags) {
  Dims key = {direction, gemmThreads(), g.groups};
  for (const auto* window : {&g.stride, &g.padding, &g.dilation})
    key.insert(key.end(), window->begin(), window->end());
  key.insert(key.end(), flags);
  for (const Tensor* t : ts) {
    key.push_back(static_cast<int64_t>(t->rank()));
    key.insert(key.end(), t->shape().begin(), t->shape().end());
    key.insert(key.end(), t->strides().begin(), t->strides().end());
  }
  return key;
}

struct ForwardPlan {
  dnnl::convolution_forward convolution;
  Operand source, weights, destination;
  memory::desc bias, scratchpad;
};

// The forward's result layout, in the order tried: the channel blocks of 16 and of 8 torch's
// oneDNN computes in (its jit kernels for AVX-512 and AVX2, with the input in the layout they
// want, NCHW itself for a few input channels), then whatever oneDNN prefers (`any`: oneDNN 2.6
// picks channels-last there, whose reorder back to NCHW cost the 3-channel convolution 1.7x
// torch's time). A layout only oneDNN's reference implementation computes is skipped.
constexpr memory::format_tag kForwardResultLayouts[] = {
    memory::format_tag::aBcd16b, memory::format_tag::aBcd8b, memory::format_tag::any};

ForwardPlan makeForwardPlan(const Conv2dGeometry& g, const Tensor& x, const Tensor& w, bool bias,
                            const Tensor& out) {
  Window window(g);
  memory::desc biasDesc = bias ? contiguousDesc({g.filters}) : memory::desc();
  memory::desc src = plainDesc(x), weights = weightDesc(g, w), dst = contiguousDesc(out.shape());
  std::optional<dnnl::convolution_forward::primitive_desc> pd;
  for (memory::format_tag layout : kForwardResultLayouts) {
    dnnl::convolution_forward::desc desc(
        dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, anyLayout(src),
        anyLayout(weights), biasDesc, memory::desc(dst.dims(), kF32, layout), window.strides,
        window.dilates, window.before, window.after);
    // allow_empty: no implementation for this layout is an empty descriptor, not an error.
    dnnl::convolution_forward::primitive_desc candidate(desc, userScratchpad(), cpuEngine(),
                                                        /*allow_empty=*/true);
    if (!candidate) continue;
    pd = candidate;
    if (!std::string(candidate.impl_info_str()).starts_with("ref")) break;
  }
  if (!pd) throw Error("runtime", "oneDNN has no convolution for this geometry");
  return {dnnl::convolution_forward(*pd),
          Operand::input(src, pd->src_desc()),
          Operand::input(weights, pd->weights_desc()),
          Operand::output(dst, pd->dst_desc()),
          biasDesc,
          pd->scratchpad_desc()};
}

// The backward's two primitives: the input's gradient (data) and the weight's and bias's
// (weights), each present when output_mask asks for what it computes.
struct BackwardPlan {
  std::optional<dnnl::convolution_backward_data> data;
  Operand dataGradOutput, weights, gradInput;
  memory::desc dataScratchpad;
  std::optional<dnnl::convolution_backward_weights> weightGradients;
  Operand weightsGradOutput, source, gradWeight;
  memory::desc gradBias, weightsScratchpad;
};

BackwardPlan makeBackwardPlan(const Conv2dGeometry& g, const Tensor& gradOut, const Tensor& x,
                              const Tensor& w, const BoolList& mask) {
  Window window(g);
  memory::desc src = plainDesc(x), weights = weightDesc(g, w), diffDst = plainDesc(gradOut);
  // Results are contiguous: the weight's gradient in the weight's dims split as oneDNN sees it.
  memory::desc diffSrc = contiguousDesc(x.shape());
  memory::desc diffWeights =
      g.groups == 1 ? contiguousDesc(w.shape())
                    : memory::desc({g.groups, g.groupFilters(), g.groupChannels, g.kh, g.kw}, kF32,
                                   memory::format_tag::abcde);
  // Both backward primitives are chosen against the forward the training step would run.
  dnnl::convolution_forward::desc forwardDesc(
      dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, anyLayout(src),
      anyLayout(weights), memory::desc(), anyLayout(diffDst), window.strides, window.dilates,
      window.before, window.after);
  dnnl::convolution_forward::primitive_desc forward(forwardDesc, cpuEngine());
  BackwardPlan plan;
  if (mask[0]) {
    dnnl::convolution_backward_data::desc desc(
        dnnl::algorithm::convolution_direct, anyLayout(diffSrc), anyLayout(weights),
        anyLayout(diffDst), window.strides, window.dilates, window.before, window.after);
    dnnl::convolution_backward_data::primitive_desc pd(desc, userScratchpad(), cpuEngine(),
                                                       forward);
    plan.data.emplace(pd);
    plan.dataGradOutput = Operand::input(diffDst, pd.diff_dst_desc());
    plan.weights = Operand::input(weights, pd.weights_desc());
    plan.gradInput = Operand::output(diffSrc, pd.diff_src_desc());
    plan.dataScratchpad = pd.scratchpad_desc();
  }
  if (mask[1] || mask[2]) {
    plan.gradBias = mask[2] ? contiguousDesc({g.filters}) : memory::desc();
    dnnl::convolution_backward_weights::desc desc(
        dnnl::algorithm::convolution_direct, anyLayout(src), anyLayout(diffWeights), plan.gradBias,
        anyLayout(diffDst), window.strides, window.dilates, window.before, window.after);
    dnnl::convolution_backward_weights::primitive_desc pd(desc, userScratchpad(), cpuEngine(),
                                                          forward);
    plan.weightGradients.emplace(pd);
    plan.weightsGradOutput = Operand::input(diffDst, pd.diff_dst_desc());
    plan.source = Operand::input(src, pd.src_desc());
    plan.gradWeight = Operand::output(diffWeights, pd.diff_weights_desc());
    plan.weightsScratchpad = pd.scratchpad_desc();
  }
  return plan;
}

// Runs `body`, turning oneDNN's exceptions into Loupe's runtime errors.
template <typename Body>
void guarded(const char* what, Body body) {
  try {
    body();
  } catch (const dnnl::error& e) {
    throw Error("runtime", std::string("oneDNN ") + what + ": " + e.what());
  }
}

} // namespace

void oneDnnConvolution(const Conv2dGeometry& g, const Tensor& input, const Tensor& weight,
                       const Tensor* bias, Tensor& out) {
  Tensor x = denseLayout(input), w = denseLayout(weight);
  Tensor b = bias ? bias->contiguous() : Tensor();
  guarded("convolution", [&] {
    static PlanCache<ForwardPlan> plans;
    std::shared_ptr<const ForwardPlan> plan =
        plans.get(planKey(0, g, {&x, &w, &out}, {bias != nullptr}),
                  [&] { return makeForwardPlan(g, x, w, bias != nullptr, out); });
    ThreadScope threads(gemmThreads());
    Call call;
    std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, call.input(plan->source, x)},
                                            {DNNL_ARG_WEIGHTS, call.input(plan->weights, w)},
                                            {DNNL_ARG_DST, call.output(plan->destination, out)},
                                            {DNNL_ARG_SCRATCHPAD, call.buffer(plan->scratchpad)}};
    if (bias) args[DNNL_ARG_BIAS] = memory(plan->bias, cpuEngine(), b.data());
    call.execute(plan->convolution, args);
    call.finish();
  });
}

void oneDnnConvolutionBackward(const Conv2dGeometry& g, const Tensor& gradOutput,
                               const Tensor& input, const Tensor& weight, const BoolList& mask,
                               std::vector<Tensor>& outputs) {
  Tensor gradOut = denseLayout(gradOutput), x = denseLayout(input), w = denseLayout(weight);
  guarded("convolution backward", [&] {
    static PlanCache<BackwardPlan> plans;
    std::shared_ptr<const BackwardPlan> plan =
        plans.get(planKey(1, g, {&gradOut, &x, &w}, {mask[0], mask[1], mask[2]}),
                  [&] { return makeBackwardPlan(g, gradOut, x, w, mask); });
    ThreadScope threads(gemmThreads());
    Call call;
    std::optional<memory> dataGradOut;
    if (plan->data) {
      dataGradOut = call.input(plan->dataGradOutput, gradOut);
      call.execute(*plan->data, {{DNNL_ARG_DIFF_DST, *dataGradOut},
                                 {DNNL_ARG_WEIGHTS, call.input(plan->weights, w)},
                                 {DNNL_ARG_DIFF_SRC, call.output(plan->gradInput, outputs[0])},
                                 {DNNL_ARG_SCRATCHPAD, call.buffer(plan->dataScratchpad)}});
    }
    if (plan->weightGradients) {
      // The data primitive's reordered gradient serves again where both want one layout.
      bool shared = dataGradOut && plan->weightsGradOutput.inner == plan->dataGradOutput.inner;
      std::unordered_map<int, memory> args = {
          {DNNL_ARG_DIFF_DST, shared ? *dataGradOut : call.input(plan->weightsGradOutput, gradOut)},
          {DNNL_ARG_SRC, call.input(plan->source, x)},
          {DNNL_ARG_DIFF_WEIGHTS, call.output(plan->gradWeight, outputs[1])},
          {DNNL_ARG_SCRATCHPAD, call.buffer(plan->weightsScratchpad)}};
      if (mask[2])
        args[DNNL_ARG_DIFF_BIAS] = memory(plan->gradBias, cpuEngine(), outputs[2].data());
      call.execute(*plan->weightGradients, args);
    }
    call.finish();
  });
  // What the mask leaves out is zeros, as in the reference (the weight's gradient is computed
  // along with the bias's when only the latter is asked for).
  for (size_t i = 0; i < outputs.size() && i < mask.size(); ++i)
    if (!mask[i]) std::memset(outputs[i].data(), 0, outputs[i].nbytes());
}

} // namespace loupe::library
