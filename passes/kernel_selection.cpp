// Kernel selection: chooses how every top-level node runs, records the choice in the plan (and,
// through the instrumentation, in the trace) with the reason and the alternatives it rejected,
// and names the kernel on the node (kernel="k3"), so the graph and the plan refer to each other.
//
// The rules, first match wins:
// - fused groups and lone Elementwise/Reduction ops: generated C++ when the CPU code generator
//   supports them (its source is kept in the choice), else the reference implementation, with
//   the code generator's reason;
// - ops with a CPU library kernel (findCpuLibraryKernel: mm/bmm, and addmm onto its bias,
//   through OpenBLAS, 1-D and 2-D convolution through oneDNN in f32 where the build has it, else as
//   im2col+gemm, max pooling, norms, each in f32/f64): that kernel; a matmul or convolution it
//   does not cover runs the reference, with the library's reason;
// - View ops: no kernel, the result aliases the input;
// - every other registered op: its reference implementation (Loupe's runtime);
// - unregistered (opaque) ops: the frontend's fallback (eager PyTorch).
// On a CUDA device (the graph's, or the one the target names: compiler/pass/target_device.h):
// - fused groups and lone Elementwise/Reduction ops: a generated CUDA kernel when the CUDA
//   generator supports them (its source and strategy kept in the choice);
// - aten.mm and aten.bmm in f32, bf16 and f16, and aten.addmm whose bias cuBLASLt adds in its
//   epilogue (runsAsCudaLibraryKernel): cuBLASLt;
// - a product and its activation in one epilogue group (passes/epilogue_fusion.cpp): cuBLASLt
//   with the activation in its epilogue;
// - aten.embedding with a 2-D table (isCudaGatherOp): the runtime's row gather kernel;
// - aten.index_put with integer indices (isCudaScatterOp): the runtime's scatter kernel;
// - View ops: no kernel;
// - every other aten op (and what the generator refuses): the op's own aten kernel on the same
//   device, through the frontend's fallback, so a trace always names what ran;
// - Loupe's own ops with no aten kernel (loupe.constant, a group the generator refuses): the
//   reference implementation on the host, its result copied to the device.
#include <memory>

#include "compiler/codegen/cpu/cpu_codegen.h"
#include "compiler/codegen/cpu/library_kernels.h"
#include "compiler/codegen/cuda/cuda_codegen.h"
#include "compiler/codegen/cuda/cuda_library_kernels.h"
#include "compiler/ir/error.h"
#include "compiler/ops/op_registry.h"
#include "compiler/pass/target_device.h"
#include "passes/pipeline.h"

namespace loupe {

namespace {

// What cudaMatmulAlignedColumns makes of a product: for its kernel's reason, and the padded
// buffer it writes, asked for as the kernel's scratch so that memory planning places it in the
// arena. A symbolic m is split per call by the same rule.
void noteColumnSplit(const Node& product, KernelChoice& choice) {
  SymExpr staging = cudaMatmulStagingBytes(product);
  if (staging == SymExpr()) return;
  const TensorType& out = product.result()->tensorType();
  int64_t n = *out.shape[1].constant(), aligned = n / 8 * 8;
  std::optional<int64_t> m = out.shape[0].constant();
  choice.reason += std::string("; ") + (m ? "" : "at m >= 128, ") + "n = " + std::to_string(n) +
                   " is not a multiple of 8, where cuBLASLt has only pre-Hopper kernels: the "
                   "first " +
                   std::to_string(aligned) + " columns and the last " +
                   std::to_string(n - aligned) +
                   " run as two calls into rows padded to 16 bytes (the kernel's scratch), then "
                   "copied out";
  choice.scratchBytes = staging;
}

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
  explicit KernelSelector(Device device) : device_(device) {}

  KernelChoice choose(const Node& node, const std::string& name) const {
    const OpInfo* info = OpRegistry::global().find(node.op());
    KernelChoice choice;
    choice.name = name;
    choice.node = node.numResults() ? node.result()->name() : node.describe();
    choice.op = node.op();
    choice.target = device_.str();
    if (node.hasBody())
      for (Node* inner : node.body()->nodes())
        choice.fusedOps.push_back(inner->op());
    if (!device_.isCpu()) {
      chooseOnCuda(node, info, choice);
      return choice;
    }

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

  // A product and what cuBLASLt's epilogue computes on it, as one call.
  void chooseEpilogue(const CudaMatmulEpilogue& epilogue, KernelChoice& choice) const {
    using Kind = CudaMatmulEpilogue::Kind;
    const std::string device = device_.str();
    bool bias = cudaLibraryKernelAddsBias(*epilogue.product);
    std::string implementation = std::string("cublaslt:matmul") + (bias ? "+bias" : "");
    std::string reason = "cuBLASLt on " + device + (bias ? " with the bias and " : " with ");
    std::string rejected = "the activation as a kernel of its own: the product goes through "
                           "memory twice more";
    switch (epilogue.kind) {
    case Kind::Relu:
      implementation += "+relu";
      reason += "the relu applied in its epilogue, in fp32 before the one store";
      break;
    case Kind::Gelu:
      implementation += "+gelu";
      reason += "the tanh-GELU applied in its epilogue, in fp32 before the one store";
      break;
    case Kind::GeluAux:
      implementation += "+gelu+aux";
      reason += "the tanh-GELU applied in its epilogue, in fp32 before the one store; the product "
                "before the GELU (saved for the backward) is stored too, as the epilogue's "
                "auxiliary output";
      rejected = "the GELU as a kernel of its own: it reads the stored product back, one launch "
                 "more";
      break;
    case Kind::GeluBackward:
      implementation += "+dgelu";
      reason = "cuBLASLt on " + device +
               " with tanh-GELU's backward in its epilogue: the product (the gradient) times "
               "GELU's derivative at the saved pre-activation, read as the auxiliary input, in "
               "fp32 before the one store";
      rejected = "gelu_backward as a kernel of its own: the gradient goes through memory twice "
                 "more";
      break;
    }
    setKind(choice, KernelKind::Library, implementation, reason);
    noteColumnSplit(*epilogue.product, choice);
    choice.rejected.push_back({KernelKind::Generated, device, rejected});
  }

  // A tanh-GELU, or its backward, that reads a cuBLASLt product whose epilogue would have
  // computed it but for the auxiliary matrix's rule (cudaEpilogueAuxRefusal): the reason, among
  // the rejected alternatives of the kernel that computes it instead (the node, or a group
  // holding it).
  void noteAuxRefusals(const Node& node, KernelChoice& choice) const {
    auto note = [&](const Node& reader, const Value* read) {
      const Node* product = read ? read->definingNode() : nullptr;
      if (!product || !isCudaEpilogueProduct(*product)) return;
      bool alone = !read->isGraphOutput() && read->users().size() == 1;
      bool saved = reader.op() == "aten.gelu" && isCudaEpilogueActivation(reader) && !alone;
      bool backward = product->op() == "aten.mm" && isCudaEpilogueGeluBackward(reader) && alone;
      if (!saved && !backward) return;
      std::string why = cudaEpilogueAuxRefusal(read->tensorType());
      if (why.empty()) return;
      choice.rejected.push_back(
          {KernelKind::Library, device_.str(),
           "in the cuBLASLt epilogue of %" + read->name() + " with " +
               (saved ? "the product (saved for the backward) stored as its auxiliary output"
                      : "the pre-activation read as its auxiliary input") +
               ": " + why});
    };
    if (!node.hasBody()) {
      if (node.numOperands()) note(node, node.operand(0));
      return;
    }
    for (const Node* inner : node.body()->nodes()) {
      const Value* read = inner->numOperands() ? inner->operand(0) : nullptr;
      if (read && !read->definingNode()) note(*inner, node.operand(read->index()));
    }
  }

  void chooseOnCuda(const Node& node, const OpInfo* info, KernelChoice& choice) const {
    const std::string device = device_.str();
    std::string whyNot;
    if (std::optional<CudaMatmulEpilogue> epilogue = cudaMatmulEpilogueOf(node)) {
      chooseEpilogue(*epilogue, choice);
      return;
    }
    if (info && isCodegenCandidate(node, info)) {
      if (canGenerateCudaKernel(node, &whyNot)) {
        GeneratedCudaKernel kernel = generateCudaKernelNamedByContent(node);
        setKind(choice, KernelKind::Generated, generatedFlavour(node, info),
                "CUDA kernel compiled by NVRTC for " + device + ": " + kernel.strategy);
        choice.rejected.push_back({KernelKind::Fallback, device,
                                   "aten op by op: every intermediate goes through device "
                                   "memory, one launch per op"});
        choice.source = std::move(kernel.source);
        noteAuxRefusals(node, choice);
        return;
      }
      choice.rejected.push_back({KernelKind::Generated, device, whyNot});
    }
    if (info && info->kind == OpKind::Matmul) {
      if (runsAsCudaLibraryKernel(node, &whyNot)) {
        DType dtype = node.result()->tensorType().dtype;
        bool bias = cudaLibraryKernelAddsBias(node);
        setKind(choice, KernelKind::Library, bias ? "cublaslt:matmul+bias" : "cublaslt:matmul",
                "cuBLASLt on " + device +
                    (dtype == DType::F32 ? ", computed in fp32 (no TF32, as torch by default)"
                                         : ", accumulated in fp32") +
                    (bias ? ", the bias added in its epilogue" : ""));
        noteColumnSplit(node, choice);
        choice.rejected.push_back({KernelKind::Fallback, device,
                                   "aten's matmul calls cuBLAS too, through the frontend: a "
                                   "Python round trip per call"});
        return;
      }
      choice.rejected.push_back({KernelKind::Library, device, whyNot});
    }
    if (info && info->kind == OpKind::View) {
      setKind(choice, KernelKind::View, "alias", "no kernel: aliases its input");
      return;
    }
    if (auto fill = cudaFillOf(node, node.attrs(), &whyNot)) {
      setKind(choice, KernelKind::Library, "cuda:fill",
              "a memset of the value's " + std::to_string(fill->wordBytes) + "-byte words on " +
                  device);
      choice.rejected.push_back({KernelKind::Fallback, device,
                                 "aten's factory op through the frontend: a Python round trip "
                                 "per call"});
      return;
    }
    if (isCudaCopyOp(node.op())) {
      setKind(choice, KernelKind::Library, "cuda:strided-copy",
              "a contiguous copy on " + device + ": one memcpy, or the strided copy kernel");
      return;
    }
    if (isCudaGatherOp(node, &whyNot)) {
      setKind(choice, KernelKind::Library, "cuda:row-gather",
              "Loupe's row gather kernel on " + device +
                  ": one thread per 16 bytes of a row where sizes and addresses allow");
      choice.rejected.push_back({KernelKind::Fallback, device,
                                 "aten's embedding through the frontend: a Python round trip "
                                 "per call"});
      return;
    }
    if (node.op() == "aten.embedding")
      choice.rejected.push_back({KernelKind::Library, device, whyNot});
    if (isCudaScatterOp(node, &whyNot)) {
      bool adds = node.attrs().getBool("accumulate", false);
      setKind(choice, KernelKind::Library, adds ? "cuda:scatter-add" : "cuda:scatter",
              "a copy of self, then Loupe's scatter kernel on " + device +
                  (adds ? ": one atomic add per value (repeated indices add in no fixed order)"
                        : ": one store per value"));
      choice.rejected.push_back({KernelKind::Fallback, device,
                                 "aten's index_put through the frontend: a Python round trip "
                                 "per call, and with accumulate a sort of the indices"});
      return;
    }
    if (node.op() == "aten.index_put")
      choice.rejected.push_back({KernelKind::Library, device, whyNot});
    if (!node.op().starts_with("aten.") && info) {
      setReference(choice, "no aten kernel for " + node.op() +
                               ": Loupe's reference runs on the host, its result is copied to " +
                               device);
      return;
    }
    setKind(choice, KernelKind::Fallback, "fallback:" + choice.op,
            (info ? "no CUDA kernel in Loupe for it" : "not in the op registry") +
                std::string(": its aten kernel runs on ") + device + " through the frontend");
    choice.rejected.push_back({KernelKind::Library, "cpu",
                               "the reference implementation runs on the host: a copy each "
                               "way"});
  }

  Device device_;
};

class KernelSelectionPass : public TablePass<PassId::KernelSelectionPass> {
public:
  void run(Graph& graph, PassContext& ctx) override {
    KernelSelector selector(targetDevice(graph, ctx.options().target));
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
