// The CUDA device backend (cuda_backend.h).
#include "compiler/runtime/cuda_backend.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <future>

#include "compiler/codegen/cuda/cuda_library_kernels.h"
#include "compiler/ir/error.h"
#include "compiler/runtime/cuda/cublaslt_matmul.h"
#include "compiler/runtime/cuda/cuda_device_memory.h"
#include "compiler/runtime/cuda/cuda_driver.h"
#include "compiler/runtime/cuda/cuda_module.h"
#include "compiler/runtime/cuda_fixed_kernels.h"

namespace loupe {

namespace {

std::string resourcesText(const std::vector<CudaEntryResources>& entries) {
  std::string text;
  for (const CudaEntryResources& e : entries) {
    text += (text.empty() ? "" : "; ") + e.name + ": " + std::to_string(e.registers) +
            " registers, " + std::to_string(e.sharedBytes) + " B shared";
    if (e.stackBytes) text += ", " + std::to_string(e.stackBytes) + " B stack";
    if (e.spillStoreBytes || e.spillLoadBytes)
      text += ", spills " + std::to_string(e.spillStoreBytes) + " B stored / " +
              std::to_string(e.spillLoadBytes) + " B loaded";
  }
  return text;
}

} // namespace

struct CudaBackend::Kernel {
  std::string name;
  CudaKernelLayout layout;
  GeneratedCudaKernel generated;
  std::unique_ptr<CudaModule> module;
  std::vector<void*> functions; // per entry
  CudaLaunch last;              // the last launch's plan (its args included)
};

namespace {

std::string dims(const unsigned d[3]) {
  return "[" + std::to_string(d[0]) + "," + std::to_string(d[1]) + "," + std::to_string(d[2]) + "]";
}

// The cuBLASLt epilogue that computes the group's epilogue node (none: a plain product).
MatmulEpilogue matmulEpilogue(const std::optional<CudaMatmulEpilogue>& epilogue, bool biased) {
  using Kind = CudaMatmulEpilogue::Kind;
  if (!epilogue) return biased ? MatmulEpilogue::Bias : MatmulEpilogue::None;
  switch (epilogue->kind) {
  case Kind::Relu:
    return biased ? MatmulEpilogue::BiasRelu : MatmulEpilogue::Relu;
  case Kind::Gelu:
    return biased ? MatmulEpilogue::BiasGelu : MatmulEpilogue::Gelu;
  case Kind::GeluAux:
    return biased ? MatmulEpilogue::BiasGeluAux : MatmulEpilogue::GeluAux;
  case Kind::GeluBackward:
    return MatmulEpilogue::DGelu; // an aten.mm: cudaMatmulEpilogueOf takes no bias here
  }
  return MatmulEpilogue::None;
}

// The epilogue's auxiliary matrix, undefined when it has none.
Tensor auxMatrixOf(const std::optional<CudaMatmulEpilogue>& epilogue,
                   const std::vector<const Tensor*>& inputs, const std::vector<Tensor>& outputs) {
  if (!epilogue) return Tensor();
  if (epilogue->kind == CudaMatmulEpilogue::Kind::GeluAux) return outputs.at(epilogue->auxResult);
  if (epilogue->kind == CudaMatmulEpilogue::Kind::GeluBackward)
    return *inputs.at(epilogue->auxInput);
  return Tensor();
}

} // namespace

bool cudaBackendAvailable(std::string* why) {
  std::string reason;
  if (!cudaDriverAvailable(&reason)) {
    if (why) *why = reason;
    return false;
  }
  if (!nvrtcAvailable(&reason)) {
    if (why) *why = "NVRTC, which compiles Loupe's CUDA kernels, is missing: " + reason;
    return false;
  }
  return true;
}

CudaBackend::CudaBackend(CudaBackendOptions options) : options_(std::move(options)) {
  CudaDeviceInfo info = cudaDeviceInfo(options_.device); // throws when there is none
  multiprocessors_ = info.multiprocessors;
  peaks_ = cudaDevicePeaks(info.computeMajor, info.multiprocessors, info.clockKHz,
                           info.memoryClockKHz, info.memoryBusWidthBits);
  arch_ = cudaArch(options_.device);
  options_.compiler.arch = arch_;
  fixed_ = &CudaFixedKernels::forDevice(options_.compiler, options_.device, multiprocessors_);
}

CudaBackend::~CudaBackend() = default;

Device CudaBackend::device() const {
  return Device{Device::Kind::CUDA, options_.device};
}

Tensor CudaBackend::allocate(DType dtype, const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t extent : shape)
    count *= extent;
  size_t bytes = static_cast<size_t>(count) * dtypeSize(dtype);
  std::shared_ptr<void> storage;
  if (bytes != 0) {
    if (options_.allocate) {
      storage = options_.allocate(bytes);
    } else {
      auto memory = std::make_shared<CudaDeviceMemory>(bytes, options_.device);
      storage = std::shared_ptr<void>(memory, memory->data());
    }
  }
  return Tensor::adopt(std::move(storage), device(), dtype, shape);
}

void CudaBackend::copy(const Tensor& from, Tensor& to) {
  if (from.shape() != to.shape() || from.dtype() != to.dtype())
    throw Error("runtime", "device copy from " + from.describe() + " into " + to.describe());
  if (from.numel() == 0) return;
  if (from.isContiguous() && to.isContiguous()) {
    cudaCopyAsync(to.data(), from.data(), to.nbytes(), stream_);
    return;
  }
  fixed_->copy(from, to, stream_);
}

Tensor CudaBackend::contiguousCopy(const Tensor& tensor) {
  if (tensor.isContiguous()) return tensor;
  Tensor packed = allocate(tensor.dtype(), tensor.shape());
  copy(tensor, packed);
  return packed;
}

Tensor CudaBackend::toHost(const Tensor& tensor) {
  if (tensor.device().isCpu()) return tensor;
  Tensor packed = contiguousCopy(tensor);
  Tensor host = Tensor::empty(tensor.dtype(), tensor.shape());
  if (host.nbytes() != 0) cudaCopyAsync(host.data(), packed.data(), host.nbytes(), stream_);
  cudaStreamSync(stream_);
  return host;
}

void CudaBackend::fromHost(const Tensor& host, Tensor& to) {
  Tensor packed = host.contiguous();
  if (packed.nbytes() == 0) return;
  Tensor target = to.isContiguous() ? to : allocate(to.dtype(), to.shape());
  cudaCopyAsync(target.data(), packed.data(), packed.nbytes(), stream_);
  // The host memory must outlive the copy.
  cudaStreamSync(stream_);
  if (target.data() != to.data()) copy(target, to);
}

void CudaBackend::beginRun() {
  cudaUseDevice(options_.device);
  stream_ = options_.stream ? options_.stream() : nullptr;
}

namespace {

// A pair of CUDA events around a step, on the stream of the run in flight when it starts.
class CudaStepTimer : public StepTimer {
public:
  explicit CudaStepTimer(const CudaBackend& backend) : backend_(backend) {}
  void start() override { events_.start(backend_.stream()); }
  void stop() override { events_.stop(backend_.stream()); }
  double milliseconds() override { return events_.milliseconds(); }

private:
  const CudaBackend& backend_;
  CudaEventTimer events_;
};

} // namespace

bool CudaBackend::canTimeSteps() {
  return !cudaStreamCapturing(stream_);
}

std::unique_ptr<StepTimer> CudaBackend::makeStepTimer() {
  return std::make_unique<CudaStepTimer>(*this);
}

void CudaBackend::addGeneratedKernel(const std::string& kernel, const Node& node,
                                     const KernelChoice*) {
  // Generated again rather than taken from the plan: the entries' names and roles come with it,
  // and the text is the plan's (the same generator and node). Named by content, the kernels of
  // identical groups (each layer of a model) are one NVRTC compile.
  kernels_.push_back(
      {kernel, describeCudaKernel(node), generateCudaKernelNamedByContent(node), {}, {}});
}

bool CudaBackend::addLibraryKernel(const Node& node) {
  // The fixed kernels' entries this node's launches may take, for buildKernels to build.
  DType dtype = node.numResults() == 1 && node.result()->type().isTensor()
                    ? node.result()->tensorType().dtype
                    : DType::F32;
  std::vector<size_t> entries;
  if (isCudaCopyOp(node.op())) {
    entries.push_back(CudaFixedKernels::copyEntry(dtype));
  } else if (isCudaGatherOp(node, nullptr)) {
    entries = CudaFixedKernels::gatherEntries(dtype);
  } else if (isCudaScatterOp(node, nullptr)) {
    CudaScatterShape shape = cudaScatterShape(node);
    if (auto entry = CudaFixedKernels::scatterEntry(
            dtype, node.attrs().getBool("accumulate", false), shape.rank, shape.indexCount))
      entries.push_back(*entry);
  }
  fixedEntries_.insert(fixedEntries_.end(), entries.begin(), entries.end());
  return !entries.empty();
}

std::map<std::string, KernelBuildRecord> CudaBackend::buildKernels() {
  std::map<std::string, KernelBuildRecord> records;
  // The entries of the process's fixed kernels (strided copy, row gather, scatter) that the
  // graph's library kernels may launch: built beside the graph's kernels (on a thread of their
  // own), unless an earlier graph built them, so that its first call does not wait for NVRTC in
  // the middle of the run. (A copy the runtime makes for a strided output builds its entry on
  // first use.)
  std::future<void> fixed;
  if (!fixedEntries_.empty())
    fixed = std::async(std::launch::async, [this] { fixed_->prepare(fixedEntries_); });
  if (kernels_.empty()) return records;
  cudaUseDevice(options_.device); // this may be a thread of its own
  std::vector<GeneratedCudaKernel> sources;
  for (const Kernel& kernel : kernels_)
    sources.push_back(kernel.generated);
  std::vector<CudaKernelBuild> built = NvrtcCompiler(options_.compiler).build(sources);
  for (size_t k = 0; k < kernels_.size(); ++k) {
    Kernel& kernel = kernels_[k];
    auto start = std::chrono::steady_clock::now();
    kernel.module = std::make_unique<CudaModule>(built[k].cubin, options_.device);
    for (const std::string& entry : kernel.generated.entries) {
      kernel.functions.push_back(kernel.module->function(entry));
      cudaCheckParameter(kernel.functions.back(), kernel.layout.argWords() * sizeof(int64_t),
                         "kernel " + kernel.name + " (" + entry + ")");
    }
    double loadMs =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    records[kernel.name] = {built[k].fromCache, built[k].buildMs + loadMs,
                            arch_ + ", " + resourcesText(built[k].entries)};
  }
  return records;
}

void CudaBackend::launch(size_t index, const KernelBinding& bound,
                         const std::vector<const Tensor*>& inputs,
                         const std::vector<Tensor*>& outputs) {
  Kernel& kernel = kernels_.at(index);
  CudaLaunch plan = planCudaLaunch(kernel.layout, bound, inputs, outputs, multiprocessors_);
  if (plan.grid[0] == 0 || plan.grid[1] == 0 || plan.grid[2] == 0) return; // nothing to do
  bindCudaWorkspace(plan, reductionWorkspace(plan.workspaceBytes));
  auto what = [&] {
    return "kernel " + kernel.name + " (" + kernel.generated.entries.at(plan.entry) + "), grid " +
           dims(plan.grid) + ", block " + dims(plan.block);
  };
  cudaLaunch(kernel.functions.at(plan.entry), plan.grid, plan.block, plan.sharedBytes, stream_,
             plan.args.data(), plan.args.size() * sizeof(int64_t), what);
  kernel.last = std::move(plan);
}

void* CudaBackend::reductionWorkspace(size_t bytes) {
  if (bytes == 0) return nullptr;
  size_t held = reductionWorkspace_.defined() ? reductionWorkspace_.nbytes() : 0;
  if (bytes > held) {
    // Doubling keeps the allocations few (and the outgrown buffers at most the current one's
    // size in all) when launch after launch needs a little more.
    size_t grown = std::max(bytes, 2 * held);
    if (held) outgrownReductionWorkspaces_.push_back(std::move(reductionWorkspace_));
    reductionWorkspace_ = allocate(DType::U8, {static_cast<int64_t>(grown)});
    // Stream-ordered before the launch that needs it: the counters start at zero.
    cudaMemsetAsync(reductionWorkspace_.data(), 0, grown, stream_);
  }
  return reductionWorkspace_.data();
}

std::string CudaBackend::describeLastLaunch(size_t index) const {
  const Kernel& kernel = kernels_.at(index);
  const CudaLaunch& last = kernel.last;
  if (last.args.empty()) return {};
  return kernel.generated.entries.at(last.entry) + " grid " + dims(last.grid) + " block " +
         dims(last.block) + ": " + last.why;
}

bool CudaBackend::hasLibraryKernel(const Node& node, std::string* whyNot) const {
  auto refuse = [&](std::string why) {
    if (whyNot) *whyNot = std::move(why);
    return false;
  };
  if (isCudaCopyOp(node.op())) return true;
  if (cudaFillOf(node, node.attrs(), nullptr)) return true;
  std::string why;
  if (isCudaGatherOp(node, &why)) return true;
  if (isCudaScatterOp(node, &why)) return true;
  if (!runsAsCudaLibraryKernel(node, &why)) return refuse(why);
  if (!cublasLtAvailable(&why)) return refuse(why);
  return true;
}

void CudaBackend::runLibraryKernel(const Node& node, const AttrMap& attrs,
                                   const std::vector<const Tensor*>& inputs,
                                   std::vector<Tensor>& outputs, const Tensor& scratch) {
  if (isCudaCopyOp(node.op())) {
    copy(*inputs.at(0), outputs.at(0));
    return;
  }
  if (std::string why; auto fill = cudaFillOf(node, attrs, &why)) {
    Tensor& out = outputs.at(0);
    Tensor target = out.isContiguous() ? out : allocate(out.dtype(), out.shape());
    if (target.numel() > 0)
      cudaFillWordsAsync(target.data(), fill->wordBytes, fill->word,
                         static_cast<size_t>(target.numel() * fill->wordsPerElement), stream_);
    if (target.data() != out.data()) copy(target, out);
    return;
  }
  if (isCudaGatherOp(node, nullptr)) {
    // aten.embedding(weight, indices): rows of the weight, in the indices' shape.
    Tensor table = *inputs.at(0), indices = contiguousCopy(*inputs.at(1));
    if (table.strides()[1] != 1) table = contiguousCopy(table);
    Tensor& out = outputs.at(0);
    Tensor target = out.isContiguous() ? out : allocate(out.dtype(), out.shape());
    fixed_->gatherRows(table, indices, target, stream_);
    if (target.data() != out.data()) copy(target, out);
    return;
  }
  if (isCudaScatterOp(node, nullptr)) {
    // aten.index_put(self, indices..., values): a copy of self, then the values scattered.
    Tensor& out = outputs.at(0);
    Tensor target = out.isContiguous() ? out : allocate(out.dtype(), out.shape());
    if (inputs.at(0)->data() != target.data()) copy(*inputs.at(0), target);
    std::vector<const Tensor*> indices(inputs.begin() + 1, inputs.end() - 1);
    fixed_->scatter(indices, *inputs.back(), attrs.getBool("accumulate", false), target, stream_);
    if (target.data() != out.data()) copy(target, out);
    return;
  }
  // A product with its activation (an epilogue group) reads the product's operands: the group's
  // inputs, by the body's parameters the product reads.
  std::optional<CudaMatmulEpilogue> epilogue = cudaMatmulEpilogueOf(node);
  if (std::string why; !epilogue && !runsAsCudaLibraryKernel(node, &why))
    throw Error("runtime", why);
  const Node& product = epilogue ? *epilogue->product : node;
  auto operand = [&](size_t i) -> const Tensor& {
    return *inputs.at(epilogue ? product.operand(i)->index() : i);
  };
  // aten.addmm(bias, a, b): the bias is added in cuBLASLt's epilogue, read as one dense row.
  bool biased = cudaLibraryKernelAddsBias(product);
  Tensor a = operand(biased ? 1 : 0), b = operand(biased ? 2 : 1);
  Tensor bias = biased ? contiguousCopy(operand(0)) : Tensor();
  bool batched = product.op() == "aten.bmm";
  Tensor& c = outputs.at(epilogue ? epilogue->result : 0);
  // GELU's auxiliary matrix: the product before the GELU, which the group yields too (written),
  // or the pre-activation GELU's backward reads. cuBLASLt takes it as dense rows at a 16-byte
  // boundary (a planned buffer always is); anything else goes through a packed copy.
  Tensor aux = auxMatrixOf(epilogue, inputs, outputs);
  bool auxOut = epilogue && epilogue->kind == CudaMatmulEpilogue::Kind::GeluAux;
  if (aux.defined() && (!aux.isContiguous() || reinterpret_cast<uintptr_t>(aux.data()) % 16 != 0)) {
    Tensor packed = allocate(aux.dtype(), aux.shape());
    if (!auxOut) copy(aux, packed);
    aux = packed;
  }
  size_t o = batched ? 1 : 0;
  auto problemOf = [&](const Tensor& x, const Tensor& y) {
    MatmulProblem p;
    p.dtype = c.dtype();
    p.batch = batched ? c.size(0) : 1;
    p.m = x.size(o);
    p.k = x.size(o + 1);
    p.n = y.size(o + 1);
    auto strides = [&](const Tensor& t, int64_t* out) {
      out[0] = batched ? t.strides()[0] : 0;
      out[1] = t.strides()[o];
      out[2] = t.strides()[o + 1];
    };
    strides(x, p.aStrides);
    strides(y, p.bStrides);
    strides(c, p.cStrides);
    if (biased) p.biasDType = bias.dtype();
    p.epilogue = matmulEpilogue(epilogue, biased);
    if (aux.defined()) strides(aux, p.auxStrides);
    return p;
  };
  MatmulProblem problem = problemOf(a, b);
  if (!cublasLtCannotRun(problem).empty()) {
    // A layout cuBLASLt does not take (no unit stride): packed copies always fit.
    a = contiguousCopy(a);
    b = contiguousCopy(b);
    problem = problemOf(a, b);
    if (std::string why = cublasLtCannotRun(problem); !why.empty())
      throw Error("runtime", "cuBLASLt cannot run " + product.op() + ": " + why);
  }
  if (c.numel() == 0) return;
  if (!workspace_.defined()) workspace_ = allocate(DType::U8, {int64_t{kCublasLtWorkspaceBytes}});
  int64_t aligned = cudaMatmulAlignedColumns(problem.dtype, problem.batch, problem.m, problem.n);
  bool denseOutput = problem.cStrides[2] == 1 && problem.cStrides[1] == problem.n;
  if (aligned == 0 || !denseOutput) {
    runCublasLtMatmul(problem, a.data(), b.data(), c.data(), biased ? bias.data() : nullptr,
                      stream_, workspace_.data(), kCublasLtWorkspaceBytes, options_.device,
                      aux.defined() ? aux.data() : nullptr);
    if (auxOut && aux.data() != outputs.at(epilogue->auxResult).data())
      copy(aux, outputs.at(epilogue->auxResult));
    return;
  }
  // (Never with an auxiliary matrix: its rows are a multiple of 8, cudaEpilogueAuxRefusal.)
  // n is not a multiple of 8 (cudaMatmulAlignedColumns says why): the first `aligned` columns
  // and the rest as two calls into rows padded to 16 bytes, then the rows copied into C. The
  // padded rows are the kernel's scratch in the arena (cudaMatmulStagingBytes); an executable
  // built without a plan has none, and allocates them.
  int64_t pitch = cudaMatmulStagingPitch(problem.n);
  size_t element = dtypeSize(problem.dtype);
  int64_t stagedBytes = problem.m * pitch * int64_t(element);
  Tensor staged =
      scratch.defined() && scratch.numel() >= stagedBytes
          ? Tensor::borrow(scratch.data(), problem.dtype, {problem.m, pitch}, {}, scratch.device())
          : allocate(problem.dtype, {problem.m, pitch});
  auto columns = [&](int64_t first, int64_t count) {
    MatmulProblem part = problem;
    part.n = count;
    part.cStrides[1] = pitch;
    const char* bColumns = b.dataAs<char>() + first * problem.bStrides[2] * int64_t(element);
    const char* biasColumns = biased ? bias.dataAs<char>() + first * int64_t(element) : nullptr;
    runCublasLtMatmul(part, a.data(), bColumns, staged.dataAs<char>() + first * int64_t(element),
                      biasColumns, stream_, workspace_.data(), kCublasLtWorkspaceBytes,
                      options_.device);
  };
  columns(0, aligned);
  columns(aligned, problem.n - aligned);
  cudaCopyRowsAsync(c.data(), problem.n * element, staged.data(), pitch * element,
                    problem.n * element, problem.m, stream_);
}

} // namespace loupe
