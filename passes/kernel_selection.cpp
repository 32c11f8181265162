// Kernel selection: chooses how every top-level node runs, records the choice in the plan (and,
// through the instrumentation, in the trace) with the reason and the alternatives it rejected,
// and names the kernel on the node (kernel="k3"), so the graph and the plan refer to each other.
//
// The rules, first match wins:
// - fused groups and lone Elementwise/Reduction ops: generated C++ when the CPU code generator
//   supports them (its source is kept in the choice), else the reference implementation, with
//   the code generator's reason;
// - ops with a CPU library kernel (findCpuLibraryKernel: mm/bmm through OpenBLAS, 2-D
//   convolution as im2col+gemm, batch norm forward, each in f32/f64): that kernel; a matmul or
//   convolution it does not cover runs the reference, with the library's reason;
// - View ops: no kernel, the result aliases the input;
// - every other registered op: its reference implementation (Loupe's runtime);
// - unregistered (opaque) ops: the frontend's fallback (eager PyTorch).
// Targets: "cpu". For "cuda" the choice stays on the CPU and records that CUDA code generation
// is not available yet, so a CUDA request still produces a working (if slower) plan; any other
// target is an error.
#include <memory>

#include "compiler/codegen/cpu/cpu_codegen.h"
#include "compiler/codegen/cpu/library_kernels.h"
#include "compiler/ir/error.h"
#include "compiler/ops/op_registry.h"
#include "passes/pipeline.h"

namespace loupe {

namespace {

const std::string kCpu = "cpu";

std::string generatedFlavour(const Node& node, const OpInfo* info) {
  if (node.op() == "loupe.fused") return "generated:" + node.attrs().getString("kind");
  return info->kind == OpKind::Reduction ? "generated:reduction" : "generated:pointwise";
}

bool isCodegenCandidate(const Node& node, const OpInfo* info) {
  if (node.op() == "loupe.fused") return true;
  return info && (info->kind == OpKind::Elementwise || info->kind == OpKind::Reduction);
}

class KernelSelector {
public:
  explicit KernelSelector(std::string target) : target_(std::move(target)) {}

  KernelChoice choose(const Node& node, const std::string& name) const {
    const OpInfo* info = OpRegistry::global().find(node.op());
    KernelChoice choice;
    choice.name = name;
    choice.node = node.numResults() ? node.result()->name() : node.describe();
    choice.op = node.op();
    choice.target = kCpu;
    if (node.hasBody())
      for (Node* inner : node.body()->nodes())
        choice.fusedOps.push_back(inner->op());

    if (!info)
      setFallback(choice);
    else if (isCodegenCandidate(node, info))
      chooseGenerated(node, info, choice);
    else if (std::string whyNot; auto library = findCpuLibraryKernel(node, &whyNot))
      setLibrary(choice, library->implementation, library->reason,
                 {KernelKind::Generated, kCpu, library->whyNotGenerated});
    else if (info->kind == OpKind::Matmul || node.op() == "aten.convolution") {
      setReference(choice, "the library kernel does not apply: " + whyNot);
      choice.rejected.push_back(
          {KernelKind::Generated, kCpu,
           info->kind == OpKind::Matmul ? "no generated matmul" : "no generated convolution"});
    } else if (info->kind == OpKind::View)
      setKind(choice, KernelKind::View, "alias", "no kernel: aliases its input");
    else
      setReference(choice, "Loupe's runtime implementation of " + node.op());

    if (target_ == "cuda")
      choice.rejected.push_back({choice.kind, "cuda", "CUDA code generation is not available yet"});
    return choice;
  }

private:
  static void setKind(KernelChoice& choice, KernelKind kind, std::string implementation,
                      std::string reason) {
    choice.kind = kind;
    choice.implementation = std::move(implementation);
    choice.reason = std::move(reason);
  }

  static void setLibrary(KernelChoice& choice, std::string implementation, std::string reason,
                         RejectedAlternative rejected) {
    setKind(choice, KernelKind::Library, std::move(implementation), std::move(reason));
    choice.rejected.push_back(std::move(rejected));
  }

  static void setReference(KernelChoice& choice, std::string reason) {
    setKind(choice, KernelKind::Library, "reference:" + choice.op, std::move(reason));
  }

  static void setFallback(KernelChoice& choice) {
    setKind(choice, KernelKind::Fallback, "fallback:" + choice.op,
            "not in the op registry: executed by the frontend's fallback");
    choice.rejected.push_back({KernelKind::Library, kCpu, "no reference implementation"});
  }

  static void chooseGenerated(const Node& node, const OpInfo* info, KernelChoice& choice) {
    std::string whyNot;
    if (canGenerateCpuKernel(node, &whyNot)) {
      setKind(choice, KernelKind::Generated, generatedFlavour(node, info),
              node.hasBody() ? "one generated loop nest for the group: intermediates stay in "
                               "registers"
                             : "generated loop specialised to the shapes and dtypes");
      choice.rejected.push_back({KernelKind::Library, kCpu,
                                 "the reference implementation runs op by op in double "
                                 "precision: slower"});
      choice.source = generateCpuKernel(node, choice.name).source;
    } else {
      setReference(choice, "generated code does not support it: " + whyNot);
      choice.rejected.push_back({KernelKind::Generated, kCpu, whyNot});
    }
  }

  std::string target_;
};

class KernelSelectionPass : public TablePass<PassId::KernelSelectionPass> {
public:
  void run(Graph& graph, PassContext& ctx) override {
    const std::string& target = ctx.options().target;
    if (target != "cpu" && target != "cuda")
      throw Error("kernel-selection", "unknown target '" + target + "' (expected cpu or cuda)");
    KernelSelector selector(target);
    auto& kernels = ctx.plan().kernels;
    kernels.clear();
    for (Node* node : graph.nodes()) {
      std::string name = "k" + std::to_string(kernels.size());
      kernels.push_back(selector.choose(*node, name));
      node->attrs().set("kernel", name);
      ctx.instrumentation().onKernelChoice(kernels.back());
    }
  }
};

} // namespace

std::unique_ptr<Pass> createKernelSelectionPass() {
  return std::make_unique<KernelSelectionPass>();
}

} // namespace loupe
