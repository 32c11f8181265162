// Launch planning: on a GPU, decides whether the torch adapter replays the graph's launches as a
// CUDA graph (docs/cuda.md, "CUDA graphs"), by a stated model of what a call costs the host.
//
// Launched one by one, each kernel costs the host a few microseconds (Loupe's launch, the
// driver's), and a cuBLASLt call or an aten fallback more. Replayed, the whole graph is one
// launch. The host time saved is wall time saved wherever the program is bound by its host: a
// small batch, a training step of a small model (Dynamo's and autograd's Python between the
// graphs already leaves the GPU waiting), a transformer layer's many short kernels, a loop that
// reads a result each step. Where the GPU is the bottleneck a replay changes little. The cost of
// a capture is memory (each capture holds its own arena and outputs, two per size at most) and,
// for a debugger, that a replay runs no per-kernel accounting: so a graph is captured only where
// the launches are a real share of its time, and the memory is bounded.
//
// The model, so a reader can redo the arithmetic (the constants are an H100's, measured there;
// on a slower GPU the GPU time is underestimated, which errs towards capturing, bounded by the
// memory cap):
//   host  per launch: a generated kernel 5 us, a library call (cuBLASLt) 10 us, an aten
//         fallback 25 us (Python and torch's dispatcher); a view none.
//   GPU   per launch: the larger of 2 us and bytes / 3 TB/s + FLOPs / peak (opCost), the peak
//         800 TFLOP/s for a bf16/f16 matrix op and 50 TFLOP/s for everything else.
//   rule  capture when the host time is at least a quarter of the GPU time, over two or more
//         launches (on the H100, mlp_train's graphs and GPT-2's in f32 and bf16 are; a
//         64M-element pointwise chain, one launch, is not); the shapes are static (a dynamic
//         dim would take one capture per size); every step runs on the device (a host
//         reference kernel that reads a tensor cannot be captured; a constant, computed once
//         and kept on the device, can); and a call holds at most 512 MiB (the plan's peak:
//         two captures hold at most twice that).
// Only a decision taken (`cuda-graph`) turns it on; --bisect-limit can refuse it like any other.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "compiler/ir/dtype.h"
#include "compiler/ops/op_cost.h"
#include "compiler/ops/op_registry.h"
#include "compiler/pass/target_device.h"
#include "passes/pipeline.h"

namespace loupe {

namespace {

constexpr double kHostMicrosPerGenerated = 5;
constexpr double kHostMicrosPerLibrary = 10;
constexpr double kHostMicrosPerFallback = 25;
constexpr double kGpuMicrosPerLaunchAtLeast = 2;
constexpr double kBytesPerMicro = 3.0e12 / 1e6;
constexpr double kMatrixFlopsPerMicro = 8.0e14 / 1e6; // bf16/f16 on the tensor cores
constexpr double kFlopsPerMicro = 5.0e13 / 1e6;       // f32, and everything not a matrix op
constexpr int64_t kMaxCapturedBytes = int64_t{512} << 20;
constexpr double kHostShareToCapture = 0.25;

struct LaunchEstimate {
  int generated = 0, library = 0, fallback = 0;
  double hostMicros = 0;    // issuing every launch
  double gpuMicros = 0;     // the kernels' own times, summed
  bool readsOnHost = false; // a step runs on the host from host copies of tensors

  int launches() const { return generated + library + fallback; }
};

double gpuMicros(const Node& node) {
  OpCost cost = opCost(node, {}, OpRegistry::global());
  bool reduced = !node.results().empty() && node.results()[0]->type().isTensor() &&
                 isReducedFloat(node.results()[0]->tensorType().dtype);
  const OpInfo* info = OpRegistry::global().find(node.op());
  bool matrix = info && isMatrixKind(info->kind);
  double flopsPerMicro = matrix && reduced ? kMatrixFlopsPerMicro : kFlopsPerMicro;
  return std::max(kGpuMicrosPerLaunchAtLeast,
                  double(cost.bytes) / kBytesPerMicro + cost.flops / flopsPerMicro);
}

double hostMicros(KernelKind kind) {
  switch (kind) {
  case KernelKind::Generated:
    return kHostMicrosPerGenerated;
  case KernelKind::Library:
    return kHostMicrosPerLibrary;
  case KernelKind::Fallback:
    return kHostMicrosPerFallback;
  case KernelKind::View:
    return 0;
  }
  return 0;
}

// A reference kernel computes on the host from host copies of its inputs; one that reads no
// tensor (a constant) runs once and is kept on the device (compiler/runtime/executable.cpp).
bool readsTensor(const Node& node) {
  for (const Value* operand : node.operands())
    if (operand->type().isTensor()) return true;
  return false;
}

LaunchEstimate estimate(Graph& graph, const Plan& plan) {
  std::unordered_map<std::string, const KernelChoice*> choices; // by kernel name ("k3")
  for (const KernelChoice& choice : plan.kernels)
    choices.emplace(choice.name, &choice);
  LaunchEstimate e;
  for (Node* node : graph.nodes()) {
    if (!node->attrs().has("kernel")) continue;
    auto found = choices.find(node->attrs().getString("kernel"));
    if (found == choices.end() || found->second->kind == KernelKind::View) continue;
    const KernelChoice& choice = *found->second;
    if (choice.implementation.starts_with("reference:") && readsTensor(*node)) e.readsOnHost = true;
    (choice.kind == KernelKind::Generated ? e.generated
     : choice.kind == KernelKind::Library ? e.library
                                          : e.fallback)++;
    e.hostMicros += hostMicros(choice.kind);
    e.gpuMicros += gpuMicros(*node);
  }
  return e;
}

std::string micros(double us) {
  char text[32];
  std::snprintf(text, sizeof text, us < 10 ? "%.1f us" : "%.0f us", us);
  return text;
}

class LaunchPlanningPass : public TablePass<PassId::LaunchPlanningPass> {
public:
  void run(Graph& graph, PassContext& ctx) override {
    Plan& plan = ctx.plan();
    plan.cudaGraph = false;
    std::optional<Device> device = validTargetDevice(graph, ctx.options().target);
    if (!device || device->isCpu()) return;
    const MemoryPlan& memory = plan.memory;
    if (!memory.concrete || !memory.peakBytes.isConstant()) return; // one capture per size
    int64_t peak = memory.peakBytes.evaluate({});
    LaunchEstimate e = estimate(graph, plan);
    if (e.launches() < 2 || e.readsOnHost || peak > kMaxCapturedBytes) return;
    if (e.hostMicros < kHostShareToCapture * e.gpuMicros) return; // launches a small share
    auto describe = [&] {
      return "replay the graph's " + std::to_string(e.launches()) +
             " launches as one CUDA graph (captured at the second call): launched one by one "
             "they take the host about " +
             micros(e.hostMicros) + " (" + std::to_string(e.generated) + " generated, " +
             std::to_string(e.library) + " library, " + std::to_string(e.fallback) +
             " fallback), at least a quarter of the kernels' " + micros(e.gpuMicros) +
             "; a capture holds " + std::to_string((peak + (1 << 20) - 1) >> 20) +
             " MiB (at most 512)";
    };
    if (ctx.decide("cuda-graph", describe)) plan.cudaGraph = true;
  }
};

} // namespace

std::unique_ptr<Pass> createLaunchPlanningPass() {
  return std::make_unique<LaunchPlanningPass>();
}

} // namespace loupe
