// A graph compiled for a CUDA device runs through the executable's device path, here on a
// stand-in device whose memory is host memory tagged cuda:0: the executable must never read it
// on the host (a tagged tensor refuses), must take every allocation, copy and kernel from the
// backend, and must give the host executable's results. So the device plumbing (kernel
// selection for CUDA, the backend's generated and library kernels, the aten fallback, host
// reference steps, outputs that are inputs or views, symbolic sizes, check mode) is tested on
// machines without a GPU; unit_tests/python/cuda runs the real one.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "compiler/codegen/cpu/cpu_codegen.h"
#include "compiler/codegen/cpu/cpu_compiler.h"
#include "compiler/ir/error.h"
#include "compiler/ops/op_registry.h"
#include "driver/compile_graph.h"
#include "passes/pipeline.h"
#include "unit_tests/compiler/codegen/codegen_test_support.h"

namespace loupe::testing {
namespace {

const Device kCuda0{Device::Kind::CUDA, 0};

// The host tensor a stand-in device tensor is.
Tensor onHost(const Tensor& t) {
  return Tensor::borrow(t.data(), t.dtype(), t.shape(), t.strides());
}

std::vector<Tensor> onHost(const std::vector<const Tensor*>& tensors) {
  std::vector<Tensor> host;
  for (const Tensor* t : tensors)
    host.push_back(!t ? Tensor() : t->device().isCpu() ? *t : onHost(*t));
  return host;
}

std::vector<const Tensor*> pointers(const std::vector<Tensor>& tensors) {
  std::vector<const Tensor*> out;
  for (const Tensor& t : tensors)
    out.push_back(t.defined() ? &t : nullptr);
  return out;
}

// Runs `node`'s reference implementation on host views of device tensors, into `outputs`.
void referenceOnHost(const Node& node, const AttrMap& boundAttrs,
                     const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  std::vector<Tensor> packed;
  for (const Tensor* t : inputs)
    packed.push_back(!t ? Tensor() : t->device().isCpu() ? t->contiguous() : onHost(*t).clone());
  std::vector<Tensor> hostOutputs;
  for (const Tensor& output : outputs)
    hostOutputs.push_back(onHost(output));
  OpRegistry::global().find(node.op())->reference(pointers(packed), boundAttrs, hostOutputs);
}

class StandInDevice : public DeviceBackend {
public:
  std::map<std::string, int> calls;
  std::vector<Tensor> scratches; // what each library call was handed
  // Whether its matmul has something to prepare in buildKernels (as CUDA's row gather has),
  // the library ops it was told of, and the thread buildKernels ran on.
  bool matmulPrepares = false;
  std::vector<std::string> libraryOps;
  std::thread::id buildThread;

  Device device() const override { return kCuda0; }
  Tensor allocate(DType dtype, const std::vector<int64_t>& shape) override {
    ++calls["allocate"];
    Tensor host = Tensor::empty(dtype, shape);
    auto storage = std::make_shared<Tensor>(host);
    return Tensor::adopt(std::shared_ptr<void>(storage, host.data()), kCuda0, dtype, shape);
  }
  void copy(const Tensor& from, Tensor& to) override {
    ++calls["copy"];
    EXPECT_EQ(from.device(), kCuda0);
    EXPECT_EQ(to.device(), kCuda0);
    onHost(to).copyFrom(onHost(from));
  }
  Tensor toHost(const Tensor& tensor) override {
    ++calls["toHost"];
    return onHost(tensor).clone();
  }
  void fromHost(const Tensor& host, Tensor& to) override {
    ++calls["fromHost"];
    EXPECT_TRUE(host.device().isCpu());
    onHost(to).copyFrom(host);
  }
  void beginRun() override { ++calls["beginRun"]; }
  void addGeneratedKernel(const std::string& kernel, const Node& node,
                          const KernelChoice* choice) override {
    ASSERT_NE(choice, nullptr);
    EXPECT_EQ(choice->target, "cuda:0");
    EXPECT_NE(choice->source.find("__global__"), std::string::npos) << kernel;
    // The stand-in runs the CPU kernel of the same group.
    sources_.push_back(generateCpuKernel(node, kernel));
    signatures_.push_back(describeKernel(node));
    names_.push_back(kernel);
  }
  bool addLibraryKernel(const Node& node) override {
    libraryOps.push_back(node.op());
    return matmulPrepares && node.op() == "aten.mm";
  }
  std::map<std::string, KernelBuildRecord> buildKernels() override {
    buildThread = std::this_thread::get_id();
    ++calls["build"];
    CpuCompilerOptions options;
    options.cacheDir = testCacheDir();
    functions_ = CpuCompiler(options).load(sources_);
    std::map<std::string, KernelBuildRecord> records;
    for (const std::string& name : names_)
      records[name] = {false, 1.0, "sm_00, stand-in"};
    return records;
  }
  void launch(size_t index, const KernelBinding& bound, const std::vector<const Tensor*>& inputs,
              const std::vector<Tensor*>& outputs) override {
    ++calls["launch"];
    std::vector<Tensor> hostInputs = onHost(inputs), hostOutputs;
    for (Tensor* output : outputs)
      hostOutputs.push_back(onHost(*output));
    std::vector<Tensor*> outputPointers;
    for (Tensor& output : hostOutputs)
      outputPointers.push_back(&output);
    launchCpuKernel(functions_.at(index), signatures_.at(index), bound, pointers(hostInputs),
                    outputPointers);
  }
  bool hasLibraryKernel(const Node& node, std::string*) const override {
    return node.op() == "aten.mm";
  }
  void runLibraryKernel(const Node& node, const AttrMap& boundAttrs,
                        const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs,
                        const Tensor& scratch) override {
    ++calls["library"];
    scratches.push_back(scratch);
    referenceOnHost(node, boundAttrs, inputs, outputs);
  }

private:
  std::vector<KernelSignature> signatures_;
  std::vector<GeneratedKernel> sources_;
  std::vector<std::string> names_;
  std::vector<CpuKernelFn> functions_;
};

// mm (library), bias + relu (generated), a row sum (generated reduction), cumsum (no CUDA
// kernel: the aten fallback), a transposed view as an output, an input returned as it is.
constexpr const char* kGraph = R"(
graph @g(%x: f32[s0,8]<cuda:0>, %w: f32[8,4]<cuda:0>, %b: f32[4]<cuda:0>) -> (f32[s0,4]<cuda:0>, f32[s0]<cuda:0>, f32[s0,4]<cuda:0>, f32[4,s0]<strides=[1,4],cuda:0>, f32[s0,8]<cuda:0>) {
  %y = aten.mm(%x, %w) : f32[s0,4]<cuda:0>
  %z = aten.add.Tensor(%y, %b) : f32[s0,4]<cuda:0>
  %r = aten.relu(%z) : f32[s0,4]<cuda:0>
  %s = aten.sum.dim_IntList(%r) {dim=[1]} : f32[s0]<cuda:0>
  %c = aten.cumsum(%r) {dim=1} : f32[s0,4]<cuda:0>
  %t = aten.t(%r) : f32[4,s0]<strides=[1,4],cuda:0>
  return %r, %s, %c, %t, %x
}
)";

CompileOptions options(std::shared_ptr<DeviceBackend> device, bool check = false) {
  CompileOptions o;
  o.pipeline = defaultPipeline();
  o.buildExecutable = true;
  o.executable.compiler.cacheDir = testCacheDir();
  o.executable.device = std::move(device);
  o.executable.check = check;
  o.executable.fallback = [](const Node& node, const std::vector<const Tensor*>& inputs,
                             std::vector<Tensor>& outputs, const SymbolBindings& bindings) {
    for (const Tensor& output : outputs)
      EXPECT_EQ(output.device(), kCuda0) << node.op();
    referenceOnHost(node, node.attrs().bound(bindings), inputs, outputs);
  };
  return o;
}

// Device copies of host inputs, through the backend (as torch's tensors would be on the GPU).
std::vector<Tensor> toDevice(StandInDevice& device, const std::vector<Tensor>& host) {
  std::vector<Tensor> out;
  for (const Tensor& t : host) {
    Tensor d = device.allocate(t.dtype(), t.shape());
    device.fromHost(t, d);
    out.push_back(d);
  }
  return out;
}

TEST(DeviceBackend, AGraphForCudaRunsThroughTheBackendAndMatchesTheHost) {
  auto device = std::make_shared<StandInDevice>();
  CompileResult onDevice = compileGraph(kGraph, "device.lir", options(device));
  ASSERT_TRUE(onDevice.ok()) << onDevice.error->message;
  // Planned for the device: every choice names it, and cumsum is left to the aten fallback.
  for (const KernelChoice& choice : onDevice.plan.kernels) {
    EXPECT_EQ(choice.target, "cuda:0") << choice.op;
    if (choice.op == "aten.cumsum") {
      EXPECT_EQ(choice.kind, KernelKind::Fallback);
    }
    if (choice.op == "aten.mm") {
      EXPECT_EQ(choice.implementation, "cublaslt:matmul");
    }
  }
  EXPECT_EQ(onDevice.executable->device(), kCuda0);

  CompileOptions hostOptions = options(nullptr);
  hostOptions.pipelineOptions.target = "cpu";
  CompileResult onHostResult = compileGraph(kGraph, "host.lir", hostOptions);
  ASSERT_TRUE(onHostResult.ok()) << onHostResult.error->message;

  for (int64_t batch : {5, 3}) { // two bindings of s0: one kernel each, laid out twice
    std::vector<Tensor> inputs = {randomTensor(DType::F32, {batch, 8}, 1),
                                  randomTensor(DType::F32, {8, 4}, 2),
                                  randomTensor(DType::F32, {4}, 3)};
    std::vector<Tensor> deviceInputs = toDevice(*device, inputs);
    std::vector<Tensor> got = onDevice.executable->run(deviceInputs);
    std::vector<Tensor> expected = onHostResult.executable->run(inputs);
    ASSERT_EQ(got.size(), expected.size());
    for (size_t o = 0; o < got.size(); ++o) {
      EXPECT_EQ(got[o].device(), kCuda0) << "output " << o;
      EXPECT_LT(maxAbsDifference(onHost(got[o]).clone(), expected[o]), 1e-5) << "output " << o;
    }
    // The input handed back is a copy on the device, not the caller's tensor.
    EXPECT_NE(got[4].data(), deviceInputs[0].data());
  }
  EXPECT_GE(device->calls["launch"], 2);
  EXPECT_GE(device->calls["library"], 2);
  EXPECT_EQ(device->calls["beginRun"], 2);
  EXPECT_EQ(device->calls["toHost"], 0); // nothing read back outside check mode
  EXPECT_FALSE(onDevice.executable->kernelBuilds().empty());
  for (const auto& [name, build] : onDevice.executable->kernelBuilds())
    EXPECT_EQ(build.resources, "sm_00, stand-in") << name;
}

// A graph of library kernels alone builds in the background when the backend has something to
// prepare for one of them (the CUDA row gather's NVRTC build), so its first run does not wait
// in the middle for it; with nothing to prepare it builds at once, as before.
TEST(DeviceBackend, ALibraryKernelWithSomethingToPrepareIsBuiltInTheBackground) {
  constexpr const char* kProduct = R"(
graph @g(%x: f32[4,8]<cuda:0>, %w: f32[8,4]<cuda:0>) -> (f32[4,4]<cuda:0>) {
  %y = aten.mm(%x, %w) : f32[4,4]<cuda:0>
  return %y
}
)";
  for (bool prepares : {true, false}) {
    auto device = std::make_shared<StandInDevice>();
    device->matmulPrepares = prepares;
    CompileOptions o = options(device);
    o.executable.buildKernelsInBackground = true;
    CompileResult compiled = compileGraph(kProduct, "product.lir", o);
    ASSERT_TRUE(compiled.ok()) << compiled.error->message;
    EXPECT_EQ(device->libraryOps, std::vector<std::string>{"aten.mm"});
    compiled.executable->waitForKernels();
    EXPECT_EQ(device->calls["build"], 1);
    EXPECT_EQ(device->buildThread != std::this_thread::get_id(), prepares)
        << (prepares ? "prepared on the caller's thread" : "built in the background");
    std::vector<Tensor> host = {randomTensor(DType::F32, {4, 8}, 1),
                                randomTensor(DType::F32, {8, 4}, 2)};
    std::vector<Tensor> got = compiled.executable->run(toDevice(*device, host));
    EXPECT_EQ(device->calls["library"], 1);
    EXPECT_EQ(got.at(0).device(), kCuda0);
  }
}

TEST(DeviceBackend, ARunsComputedOutputsShareOneAllocation) {
  auto device = std::make_shared<StandInDevice>();
  CompileResult compiled = compileGraph(kGraph, "device.lir", options(device));
  ASSERT_TRUE(compiled.ok()) << compiled.error->message;
  std::vector<Tensor> host = {randomTensor(DType::F32, {5, 8}, 1),
                              randomTensor(DType::F32, {8, 4}, 2),
                              randomTensor(DType::F32, {4}, 3)};
  std::vector<Tensor> inputs = toDevice(*device, host);
  std::vector<Tensor> expected = compiled.executable->run(inputs); // lays out, takes the arena
  for (Tensor& e : expected)
    e = onHost(e).clone();
  int before = device->calls["allocate"];
  std::vector<Tensor> got = compiled.executable->run(inputs);
  // %r, %s and %c in one allocation; %t (a second output on %r's memory) and %x (an input) are
  // copies, one allocation each.
  EXPECT_EQ(device->calls["allocate"] - before, 3);
  auto* base = static_cast<char*>(got[0].data());
  for (size_t o = 0; o < 3; ++o) {
    auto* start = static_cast<char*>(got[o].data());
    EXPECT_EQ((start - base) % 256, 0) << "output " << o;
    for (size_t other = 0; other < o; ++other) {
      auto* otherStart = static_cast<char*>(got[other].data());
      bool apart =
          start >= otherStart + got[other].nbytes() || otherStart >= start + got[o].nbytes();
      EXPECT_TRUE(apart) << "outputs " << other << " and " << o << " overlap";
    }
  }
  // The memory lives while any output does.
  Tensor sum = got[1];
  got.clear();
  EXPECT_EQ(maxAbsDifference(onHost(sum).clone(), expected[1]), 0);
}

// A product whose n is not a multiple of 8, in bf16 at m >= 128 (GPT-2's logits on CUDA), writes
// padded rows before copying them out: kernel selection asks for them as the kernel's scratch,
// memory planning places them in the arena for that step, and the executable hands them to the
// library kernel, sized for each binding of a symbolic m, with no allocation of their own.
TEST(DeviceBackend, ALibraryKernelIsHandedTheScratchItsPlanPlaced) {
  constexpr const char* kLogits = R"(
graph @logits(%x: bf16[s0,16]<cuda:0>, %w: bf16[16,8193]<cuda:0>) -> (bf16[s0,8193]<cuda:0>) {
  %h = aten.relu(%x) : bf16[s0,16]<cuda:0>
  %y = aten.mm(%h, %w) : bf16[s0,8193]<cuda:0>
  return %y
}
)";
  auto device = std::make_shared<StandInDevice>();
  CompileResult compiled = compileGraph(kLogits, "logits.lir", options(device));
  ASSERT_TRUE(compiled.ok()) << compiled.error->message;
  const KernelChoice* product = nullptr;
  for (const KernelChoice& choice : compiled.plan.kernels)
    if (choice.op == "aten.mm") product = &choice;
  ASSERT_NE(product, nullptr);
  // m rows of 8193 rounded up past the aligned 8192 columns, 2 bytes each.
  EXPECT_EQ(product->scratchBytes, SymExpr::symbol("s0") * SymExpr(16400));
  const BufferAssignment& scratch = compiled.plan.memory.buffers.back();
  EXPECT_EQ(scratch.scratchOf, product->name);
  EXPECT_EQ(scratch.value, product->node + ".scratch");
  EXPECT_EQ(scratch.firstUse, scratch.lastUse);
  EXPECT_FALSE(scratch.graphInput || scratch.graphOutput);

  for (int64_t m : {128, 200}) {
    std::vector<Tensor> inputs = toDevice(
        *device, {randomTensor(DType::BF16, {m, 16}, 1), randomTensor(DType::BF16, {16, 8193}, 2)});
    compiled.executable->run(inputs); // lays the binding out
    int allocations = device->calls["allocate"];
    device->scratches.clear();
    compiled.executable->run(inputs);
    ASSERT_EQ(device->scratches.size(), 1u);
    const Tensor& handed = device->scratches[0];
    ASSERT_TRUE(handed.defined());
    EXPECT_EQ(handed.device(), kCuda0);
    EXPECT_EQ(handed.nbytes(), static_cast<size_t>(m * 8200 * 2)) << "m = " << m;
    // The arena was laid out by the first run: this one allocates only its output.
    EXPECT_EQ(device->calls["allocate"] - allocations, 1) << "m = " << m;
    EXPECT_GE(compiled.executable->memoryLayout().arenaBytes, m * 8200 * 2);
  }
}

// A constant is computed on the host once per binding and then read where it is kept on the
// device, binding after binding (a CUDA graph captured at one binding reads it on every replay);
// one handed out as an output is a copy the caller may change.
TEST(DeviceBackend, AConstantIsMadeOnTheHostOncePerBindingAndAnOutputOfItIsACopy) {
  constexpr const char* kConstants = R"(
graph @consts(%x: f32[s0]<cuda:0>) -> (f32[s0]<cuda:0>, f32[]<cuda:0>) {
  %c = loupe.constant() {data=[2.0], dtype=f32, shape=[], device="cuda:0"} : f32[]<cuda:0>
  %y = aten.mul.Tensor(%x, %c) : f32[s0]<cuda:0>
  return %y, %c
}
)";
  auto device = std::make_shared<StandInDevice>();
  CompileResult compiled = compileGraph(kConstants, "consts.lir", options(device));
  ASSERT_TRUE(compiled.ok()) << compiled.error->message;
  // Host-to-device copies a run makes beside its input's.
  auto copiesAt = [&](int64_t n) {
    Tensor x = randomTensor(DType::F32, {n}, static_cast<uint64_t>(n));
    std::vector<Tensor> inputs = toDevice(*device, {x});
    int before = device->calls["fromHost"];
    std::vector<Tensor> out = compiled.executable->run(inputs);
    for (int64_t i = 0; i < n; ++i)
      EXPECT_FLOAT_EQ(onHost(out[0]).at(i), 2 * x.at(i)) << "at " << n;
    EXPECT_EQ(onHost(out[1]).at(0), 2.0);
    onHost(out[1]).set(0, 7.0); // the caller's copy: the kept constant stays 2
    return device->calls["fromHost"] - before;
  };
  EXPECT_EQ(copiesAt(5), 1);
  EXPECT_EQ(copiesAt(3), 1);
  EXPECT_EQ(copiesAt(5), 0);
  EXPECT_EQ(copiesAt(3), 0);
}

// A training forward saves a tanh-GELU's input, the Linear's product, for GELU's backward: on
// CUDA the product and the GELU are one epilogue group with two results (cuBLASLt writes the
// product from its epilogue's auxiliary output). The stand-in's library kernel computes the
// group's body op by op into the buffers the executable hands it: the product (a graph output,
// an allocation of its own) and the GELU (in the arena, read by the next product), in the
// group's result order, so a swap or a shared buffer shows in the outputs.
TEST(DeviceBackend, AGeluEpilogueGroupWritesBothOfItsResultsIntoTheirBuffers) {
  constexpr const char* kTrainingForward = R"(
graph @forward(%x: bf16[4,16]<cuda:0>, %w: bf16[16,32]<cuda:0>, %b: bf16[32]<cuda:0>, %w2: bf16[32,8]<cuda:0>) -> (bf16[4,8]<cuda:0>, bf16[4,32]<cuda:0>) {
  %y = aten.addmm(%b, %x, %w) : bf16[4,32]<cuda:0>
  %h = aten.gelu(%y) {approximate="tanh"} : bf16[4,32]<cuda:0>
  %o = aten.mm(%h, %w2) : bf16[4,8]<cuda:0>
  return %o, %y
}
)";
  class EpilogueDevice : public StandInDevice {
  public:
    std::vector<const void*> written; // the buffers of the last group call, in result order
    bool hasLibraryKernel(const Node& node, std::string* whyNot) const override {
      return node.op() == "loupe.fused" || StandInDevice::hasLibraryKernel(node, whyNot);
    }
    void runLibraryKernel(const Node& node, const AttrMap& boundAttrs,
                          const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs,
                          const Tensor& scratch) override {
      if (node.op() != "loupe.fused") {
        StandInDevice::runLibraryKernel(node, boundAttrs, inputs, outputs, scratch);
        return;
      }
      ++calls["epilogue"];
      written.clear();
      const Graph& body = *node.body();
      std::map<const Value*, Tensor> values;
      for (size_t i = 0; i < body.numInputs(); ++i)
        values[body.input(i)] = onHost(*inputs.at(i)).clone();
      for (const Node* member : body.nodes()) {
        std::vector<Tensor> operands;
        for (const Value* operand : member->operands())
          operands.push_back(values.at(operand));
        const TensorType& type = member->result()->tensorType();
        std::vector<int64_t> shape;
        for (const SymExpr& extent : type.shape)
          shape.push_back(*extent.constant());
        std::vector<Tensor> results = {Tensor::empty(type.dtype, shape)};
        OpRegistry::global()
            .find(member->op())
            ->reference(pointers(operands), member->attrs(), results);
        values[member->result()] = results[0];
      }
      ASSERT_EQ(outputs.size(), body.outputs().size());
      for (size_t r = 0; r < outputs.size(); ++r) {
        onHost(outputs[r]).copyFrom(values.at(body.outputs()[r]));
        written.push_back(outputs[r].data());
      }
    }
  };
  auto device = std::make_shared<EpilogueDevice>();
  CompileResult compiled = compileGraph(kTrainingForward, "forward.lir", options(device));
  ASSERT_TRUE(compiled.ok()) << compiled.error->message;
  const KernelChoice* group = nullptr;
  for (const KernelChoice& choice : compiled.plan.kernels)
    if (choice.op == "loupe.fused") group = &choice;
  ASSERT_NE(group, nullptr);
  EXPECT_EQ(group->implementation, "cublaslt:matmul+bias+gelu+aux");
  // Two buffers for the group: %y handed to the caller, %h in the arena.
  std::map<std::string, BufferAssignment> buffers;
  for (const BufferAssignment& buffer : compiled.plan.memory.buffers)
    buffers[buffer.value] = buffer;
  ASSERT_TRUE(buffers.count("y") && buffers.count("h"));
  EXPECT_TRUE(buffers["y"].graphOutput);
  EXPECT_FALSE(buffers["h"].graphOutput);
  EXPECT_GE(buffers["h"].offset, 0);

  CompileOptions hostOptions = options(nullptr);
  hostOptions.pipelineOptions.target = "cpu";
  CompileResult onHostResult = compileGraph(kTrainingForward, "host.lir", hostOptions);
  ASSERT_TRUE(onHostResult.ok()) << onHostResult.error->message;
  std::vector<Tensor> inputs = {
      randomTensor(DType::BF16, {4, 16}, 1), randomTensor(DType::BF16, {16, 32}, 2),
      randomTensor(DType::BF16, {32}, 3), randomTensor(DType::BF16, {32, 8}, 4)};
  std::vector<Tensor> got = compiled.executable->run(toDevice(*device, inputs));
  std::vector<Tensor> expected = onHostResult.executable->run(inputs);
  EXPECT_EQ(device->calls["epilogue"], 1);
  ASSERT_EQ(device->written.size(), 2u);
  EXPECT_NE(device->written[0], device->written[1]);
  ASSERT_EQ(got.size(), 2u);
  for (size_t o = 0; o < got.size(); ++o) {
    // bf16: the host rounds the product before adding the bias, the group adds it first.
    double scale = maxAbsDifference(expected[o], Tensor::zeros(DType::BF16, expected[o].shape()));
    EXPECT_LT(maxAbsDifference(onHost(got[o]).clone(), expected[o]), 2e-2 * scale)
        << "output " << o;
  }
}

TEST(DeviceBackend, CheckModeComparesOnHostCopies) {
  auto device = std::make_shared<StandInDevice>();
  CompileResult compiled = compileGraph(kGraph, "device.lir", options(device, true));
  ASSERT_TRUE(compiled.ok()) << compiled.error->message;
  std::vector<Tensor> inputs =
      toDevice(*device, {randomTensor(DType::F32, {4, 8}, 1), randomTensor(DType::F32, {8, 4}, 2),
                         randomTensor(DType::F32, {4}, 3)});
  compiled.executable->run(inputs);
  EXPECT_GT(device->calls["toHost"], 0);
  bool checked = false;
  for (const auto& [name, stats] : compiled.executable->stats().kernels)
    if (stats.implementation.starts_with("generated:") ||
        stats.implementation.starts_with("library:")) {
      EXPECT_LT(stats.maxAbsError, 1e-5) << name;
      checked = true;
    }
  EXPECT_TRUE(checked);
}

TEST(DeviceBackend, HostElementAccessOfADeviceTensorIsRefused) {
  StandInDevice device;
  Tensor t = device.allocate(DType::F32, {2, 3});
  try {
    (void)t.at(0);
    FAIL() << "read a device element on the host";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("f32[2,3] on cuda:0"), std::string::npos) << e.what();
  }
  EXPECT_THROW(t.clone(), Error);
}

// A stand-in device that times steps: every step takes kStepMs by its timers, and its peaks are
// 1 GB/s and 1 GFLOP/s. While `capturing`, its runs cannot be timed (a CUDA graph capture).
class TimedStandInDevice : public StandInDevice {
public:
  static constexpr double kStepMs = 2;
  bool capturing = false;

  bool canTimeSteps() override { return !capturing; }
  std::unique_ptr<StepTimer> makeStepTimer() override {
    ++calls["makeStepTimer"];
    return std::make_unique<Timer>(calls);
  }
  DevicePeaks peaks() const override {
    return {.bytesPerSecond = 1e9, .fp32FlopsPerSecond = 1e9, .tensorFlopsPerSecond = 1e10};
  }

private:
  struct Timer : StepTimer {
    explicit Timer(std::map<std::string, int>& calls) : calls(calls) {}
    void start() override { ++calls["timerStart"]; }
    void stop() override { ++calls["timerStop"]; }
    double milliseconds() override { return kStepMs; }
    std::map<std::string, int>& calls;
  };
};

// On a device, profiled calls time each step with the backend's timers (one per step, reused),
// the share of the device's peak follows from them; a call the device cannot time (captured)
// is not profiled and a later one takes its place.
TEST(DeviceBackend, ProfilingTimesStepsWithTheBackendsTimers) {
  auto device = std::make_shared<TimedStandInDevice>();
  CompileOptions o = options(device);
  o.executable.profile = true;
  CompileResult compiled = compileGraph(kGraph, "device.lir", o);
  ASSERT_TRUE(compiled.ok()) << compiled.error->message;
  std::vector<Tensor> inputs =
      toDevice(*device, {randomTensor(DType::F32, {4, 8}, 1), randomTensor(DType::F32, {8, 4}, 2),
                         randomTensor(DType::F32, {4}, 3)});
  compiled.executable->run(inputs); // not profiled: the first call
  EXPECT_EQ(device->calls["timerStart"], 0);
  device->capturing = true;
  compiled.executable->run(inputs);
  EXPECT_EQ(device->calls["timerStart"], 0);
  device->capturing = false;
  for (int call = 0; call < 6; ++call)
    compiled.executable->run(inputs);
  const auto& kernels = compiled.executable->stats().kernels;
  size_t steps = kernels.size();
  EXPECT_EQ(device->calls["makeStepTimer"], static_cast<int>(steps));
  EXPECT_EQ(device->calls["timerStart"], static_cast<int>(steps * Executable::kProfiledCalls));
  EXPECT_EQ(device->calls["timerStop"], device->calls["timerStart"]);
  for (const auto& [name, stats] : kernels) {
    EXPECT_EQ(stats.profileRuns, Executable::kProfiledCalls) << name;
    EXPECT_EQ(stats.profileMs, TimedStandInDevice::kStepMs) << name;
    ASSERT_TRUE(stats.bytes && stats.flops && stats.peakFraction) << name;
    double seconds = TimedStandInDevice::kStepMs / 1e3;
    double memory = double(*stats.bytes) / seconds / 1e9, compute = *stats.flops / seconds / 1e9;
    EXPECT_DOUBLE_EQ(*stats.peakFraction, std::max(memory, compute)) << name;
    EXPECT_EQ(stats.bound, compute > memory ? "compute" : "memory") << name;
  }
  const KernelStats& mm = kernels.at(compiled.plan.kernels.front().name);
  EXPECT_EQ(mm.implementation, "library:aten.mm");
  EXPECT_EQ(*mm.flops, 2.0 * 4 * 4 * 8);
}

} // namespace
} // namespace loupe::testing
