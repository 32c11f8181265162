#include "compiler/runtime/executable.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>

#include "compiler/codegen/cpu/cpu_kernel_abi.h"
#include "compiler/codegen/cpu/library_kernels.h"
#include "compiler/ir/error.h"
#include "compiler/ops/op_cost.h"
#include "compiler/pass/memory_layout.h"
#include "compiler/tensor/allocation_meter.h"

namespace loupe {

namespace {

enum class StepKind { Generated, Library, Reference, Interpret, View, Fallback };

std::string valueLabel(const Value* value) {
  return "%" + (value->name().empty() ? std::to_string(value->index()) : value->name());
}

Tensor indexTensor(int64_t value) {
  return Tensor::fromDoubles({static_cast<double>(value)}, DType::I64, {});
}

std::vector<Type> resultTypes(const Node& node) {
  std::vector<Type> types;
  for (const Value* result : node.results())
    types.push_back(result->type());
  return types;
}

// Reference implementations index their inputs directly, so they get packed ones.
std::vector<Tensor> packed(const std::vector<const Tensor*>& inputs) {
  std::vector<Tensor> out;
  for (const Tensor* input : inputs)
    out.push_back(input ? input->contiguous() : Tensor());
  return out;
}

std::vector<const Tensor*> pointers(const std::vector<Tensor>& tensors) {
  std::vector<const Tensor*> out;
  for (const Tensor& t : tensors)
    out.push_back(t.defined() ? &t : nullptr);
  return out;
}

void runReferenceInto(const OpInfo& info, const Node& node,
                      const std::vector<const Tensor*>& inputs, const AttrMap& boundAttrs,
                      std::vector<Tensor>& outputs) {
  if (!info.reference) throw Error("runtime", node.op() + " has no reference implementation");
  std::vector<Tensor> contiguousInputs = packed(inputs);
  info.reference(pointers(contiguousInputs), boundAttrs, outputs);
}

// Runs a graph (a fused group's body) node by node with reference implementations and views.
std::vector<Tensor> interpret(const Graph& graph, const std::vector<const Tensor*>& inputs,
                              const SymbolBindings& bindings, const OpRegistry& registry) {
  std::map<const Value*, Tensor> values;
  for (size_t i = 0; i < graph.numInputs(); ++i)
    values[graph.input(i)] = *inputs.at(i);
  for (const Node* node : graph.nodes()) {
    const OpInfo* info = registry.find(node->op());
    if (!info)
      throw Error("runtime", "op " + node->op() + " inside a fused group is not registered",
                  ErrorContext{.node = node->describe()});
    std::vector<const Tensor*> operands;
    for (const Value* operand : node->operands())
      operands.push_back(operand ? &values.at(operand) : nullptr);
    std::vector<Tensor> results;
    if (info->view)
      results.push_back(info->view(*operands.at(0), node->attrs().bound(bindings)));
    else
      results = runReference(*info, pointers(packed(operands)), node->attrs(), resultTypes(*node),
                             bindings);
    for (size_t r = 0; r < results.size(); ++r)
      values[node->result(r)] = results[r];
  }
  std::vector<Tensor> outputs;
  for (const Value* output : graph.outputs())
    outputs.push_back(values.at(output));
  return outputs;
}

void recordError(const Tensor& actual, const Tensor& expected, KernelStats& stats) {
  for (int64_t i = 0; i < expected.numel(); ++i) {
    double a = actual.at(i), e = expected.at(i);
    if ((std::isnan(a) && std::isnan(e)) || a == e) continue; // equal infinities included
    double diff = std::isnan(a) || std::isnan(e) ? INFINITY : std::fabs(a - e);
    stats.maxAbsError = std::max(stats.maxAbsError, diff);
    stats.maxRelError = std::max(stats.maxRelError, diff / std::max(std::fabs(e), 1e-6));
  }
}

} // namespace

struct Executable::Step {
  const Node* node;
  StepKind kind;
  std::string kernel; // stats key
  std::string implementation;
  const OpInfo* info = nullptr;
  CpuKernelFn function = nullptr;
  size_t deviceKernel = 0; // on a device: its index among the backend's generated kernels
  KernelSignature signature;
  KernelBinding launch; // the signature under the laid-out binding
  // Per operand: its slot, or -1 for an absent operand or an index operand (then `indexValue`).
  std::vector<int> operandSlots;
  std::vector<const SymExpr*> indexValues;
  std::vector<Tensor> indexOperands; // 0-d tensors of indexValues under the laid-out binding
  std::vector<int> resultSlots;
  std::vector<int> bufferSlots;  // results computed into a preallocated buffer, in order
  std::vector<bool> bufferOwned; // per bufferSlots entry: its own allocation (an output's)
  // The kernel's working memory in the arena (KernelChoice::scratchBytes): its index among the
  // plan's buffers, or -1; and the bytes it spans under the laid-out binding.
  int scratchPlanned = -1;
  Tensor scratch;
  AttrMap boundAttrs;           // the node's attributes under the laid-out binding
  KernelStats* stats = nullptr; // into stats_, found on the step's first run
  // View steps: the result's geometry for the base geometry last seen under the laid-out
  // binding. Working it out (SymExpr arithmetic in the op's view rule) costs microseconds; a
  // base laid out in the arena or in an output buffer has the same geometry on every run of a
  // binding, and a graph input usually does too.
  struct ViewGeometry {
    std::vector<int64_t> baseShape, baseStrides, shape, strides;
    int64_t baseOffset = 0, offset = 0;
  };
  std::optional<ViewGeometry> view;
  // On a device, a reference step that reads no tensor (a constant, a factory) computed on the
  // host once per binding, kept on the device: later runs read it there, which never waits for
  // the host (a CUDA graph capture forbids that). Kept for every binding (up to
  // kMaxMemoryUses): a CUDA graph captured for one binding reads its constants on every replay,
  // after runs at other bindings.
  std::map<SymbolBindings, std::vector<Tensor>> deviceConstants;
  // Profiling: the step's cost under the laid-out binding (none where the IR cannot say: a size
  // no input binds), its time in the call in flight (on a device, its timer's), and per profiled
  // call its time with the cost of that call's sizes.
  struct ProfileSample {
    double ms;
    std::optional<OpCost> cost;
  };
  std::optional<OpCost> cost;
  double profiledMs = 0;
  std::unique_ptr<StepTimer> timer;
  std::vector<ProfileSample> profile;
};

struct Executable::Buffer {
  int slot;
  size_t planned;     // its index among the memory plan's buffers
  bool ownAllocation; // an output, or a value output views look into: outside the arena
  const TensorType* type;
  std::vector<int64_t> shape; // under the laid-out binding
  // On a device, an own allocation's place in the run's output block (see allocateOutputs).
  size_t blockOffset = 0;
};

namespace {

// Where each output starts in the output block: as aligned as the caching allocator's own
// blocks, so vector loads and cuBLASLt's widest algorithms see the same alignment as in a
// tensor of their own.
constexpr size_t kOutputAlignment = kCachingAllocatorAlignment;

} // namespace

Executable::Executable(const Graph& graph, const Plan& plan, ExecutableOptions options)
    : graph_(graph.clone()), options_(std::move(options)),
      registry_(options_.registry ? *options_.registry : OpRegistry::global()),
      memory_(plan.memory.buffers.empty() ? planMemory(*graph_, arenaAlignment(device()))
                                          : plan.memory),
      lastStatsReport_(std::chrono::steady_clock::now()) {
  std::map<std::string, const KernelChoice*> choices;
  for (const KernelChoice& choice : plan.kernels)
    choices[choice.name] = &choice;

  DeviceBackend* device = options_.device.get();
  std::vector<GeneratedKernel> generated; // host kernels
  std::vector<std::string> generatedNames;
  size_t deviceKernels = 0;
  bool preparesLibraryKernels = false; // the device's build has work for a library kernel
  for (const Node* node : graph_->nodes()) {
    Step step{node, StepKind::Reference, node->describe(), {}, registry_.find(node->op())};
    const KernelChoice* choice = nullptr;
    if (const std::string* name = kernelNameOf(*node); name && choices.count(*name)) {
      choice = choices[*name];
      step.kernel = *name;
    }
    bool fused = node->op() == "loupe.fused";
    StepKind byDefault = !step.info             ? StepKind::Fallback
                         : step.info->view      ? StepKind::View
                         : fused                ? StepKind::Interpret
                         : step.info->reference ? StepKind::Reference
                                                : StepKind::Fallback;
    step.kind = byDefault;
    if (choice && choice->kind == KernelKind::Generated) {
      step.kind = StepKind::Generated;
      step.signature = describeKernel(*node, registry_);
      if (device) {
        step.deviceKernel = deviceKernels++;
        device->addGeneratedKernel(step.kernel, *node, choice);
      } else {
        generatedNames.push_back(step.kernel);
        // The plan's source is what the trace shows, so that is what runs; it was generated
        // with the built-in ops, so a custom registry regenerates it.
        if (!choice->source.empty() && !options_.registry)
          generated.push_back({cpuKernelEntry(step.kernel), choice->source});
        else
          generated.push_back(generateCpuKernel(*node, step.kernel, registry_));
      }
    } else if (choice && choice->kind == KernelKind::Library &&
               (device ? device->hasLibraryKernel(*node, nullptr)
                       : hasCpuLibraryKernel(*node, nullptr))) {
      step.kind = StepKind::Library;
      if (device && device->addLibraryKernel(*node)) preparesLibraryKernels = true;
    } else if (choice && choice->kind == KernelKind::Fallback) {
      step.kind = StepKind::Fallback;
    }
    static const std::map<StepKind, std::string> kPrefix{
        {StepKind::Generated, "generated:"}, {StepKind::Library, "library:"},
        {StepKind::Reference, "reference:"}, {StepKind::Interpret, "reference:"},
        {StepKind::View, "view:"},           {StepKind::Fallback, "fallback:"}};
    step.implementation = kPrefix.at(step.kind) + node->op();
    steps_.push_back(std::move(step));
  }

  if (options_.profile && device) peaks_ = device->peaks();

  bool background = options_.buildKernelsInBackground &&
                    (!generated.empty() || deviceKernels != 0 || preparesLibraryKernels);
  // Timed where it runs, so a background build's time leaves out the wait for it.
  auto build = [compiler = options_.compiler, kernels = std::move(generated),
                names = std::move(generatedNames), device = options_.device] {
    auto start = std::chrono::steady_clock::now();
    KernelBuild built;
    if (device) {
      built.records = device->buildKernels();
    } else {
      std::vector<CpuKernelBuild> builds = CpuCompiler(compiler).build(kernels);
      for (size_t k = 0; k < builds.size(); ++k) {
        built.functions.push_back(builds[k].function);
        built.records[names[k]] = {builds[k].fromCache, builds[k].buildMs, builds[k].isa};
      }
    }
    built.ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return built;
  };
  if (background)
    kernelBuild_ = std::async(std::launch::async, std::move(build));
  else
    attachKernels(build());
  planSlots();
}

void Executable::attachKernels(const KernelBuild& built) {
  kernelBuildMs_ = built.ms;
  kernelBuilds_ = built.records;
  auto next = built.functions.begin();
  for (Step& step : steps_)
    if (step.kind == StepKind::Generated && next != built.functions.end()) step.function = *next++;
}

void Executable::waitForKernels() {
  if (kernelBuild_.valid()) {
    try {
      attachKernels(kernelBuild_.get());
    } catch (...) {
      kernelBuildError_ = std::current_exception();
    }
  }
  if (kernelBuildError_) std::rethrow_exception(kernelBuildError_);
}

// Everything about where values live that does not depend on sizes: slots, and which buffer of
// the memory plan each step computes into (a view lives in its input's buffer).
void Executable::planSlots() {
  std::map<const Value*, int> slotOf;
  for (size_t i = 0; i < graph_->numInputs(); ++i)
    slotOf.emplace(graph_->input(i), static_cast<int>(i));
  std::map<const Value*, const Value*> root;
  for (Step& step : steps_) {
    const Node& node = *step.node;
    for (const Value* operand : node.operands()) {
      bool index = operand && operand->type().isIndex();
      step.operandSlots.push_back(operand && !index ? slotOf.at(operand) : -1);
      step.indexValues.push_back(index ? &operand->type().indexValue() : nullptr);
    }
    for (const Value* result : node.results()) {
      int slot = static_cast<int>(slotOf.size());
      slotOf.emplace(result, slot);
      step.resultSlots.push_back(slot);
      if (!result->type().isTensor()) continue;
      const Value* viewed = step.kind == StepKind::View ? node.operand(0) : nullptr;
      root[result] = !viewed ? result : root.count(viewed) ? root[viewed] : viewed;
    }
  }
  // The plan lists the graph's inputs, then each computed tensor in step order: the buffers
  // are matched in that order, and a plan made for another graph is refused.
  size_t planned = 0;
  while (planned < memory_.buffers.size() && memory_.buffers[planned].graphInput)
    ++planned;
  auto mismatch = [&](const std::string& what) {
    return Error("runtime",
                 "the memory plan does not match graph @" + graph_->name() + ": " + what);
  };
  for (Step& step : steps_) {
    if (step.kind == StepKind::View) continue;
    for (const Value* result : step.node->results()) {
      if (!result->type().isTensor()) continue;
      const TensorType& type = result->tensorType();
      SymExpr bytes = bufferBytes(type);
      if (planned == memory_.buffers.size() || memory_.buffers[planned].bytes != bytes)
        throw mismatch("no buffer of " + bytes.str() + " bytes for " + valueLabel(result));
      int slot = slotOf.at(result);
      step.bufferSlots.push_back(slot);
      step.bufferOwned.push_back(memory_.buffers[planned].graphOutput);
      buffers_.push_back({slot, planned, memory_.buffers[planned].graphOutput, &type, {}});
      ++planned;
    }
    if (planned < memory_.buffers.size() && !step.kernel.empty() &&
        memory_.buffers[planned].scratchOf == step.kernel)
      step.scratchPlanned = static_cast<int>(planned++);
  }
  if (planned != memory_.buffers.size())
    throw mismatch("buffer %" + memory_.buffers[planned].value + " belongs to no step");
  slots_.resize(slotOf.size());
  // Each allocation is handed out once: a second output on it (the same value again, or another
  // view of it) is a copy, so that no two outputs share memory (an in-place update of one, a
  // gradient accumulated into it, must not show in the other).
  std::set<const Value*> handedOut;
  for (const Value* output : graph_->outputs()) {
    outputSlots_.push_back(output->type().isIndex() ? -1 : slotOf.at(output));
    bool isInput = output->type().isTensor() && !output->definingNode();
    outputInputs_.push_back(isInput ? slotOf.at(output) : -1);
    outputOwned_.push_back(root.count(output) && root[output]->definingNode() &&
                           handedOut.insert(root[output]).second);
  }
}

void Executable::layOut(const SymbolBindings& bindings) {
  laidOutFor_.reset(); // until every step is bound again
  auto kept = memoryUses_.find(bindings);
  if (kept == memoryUses_.end()) {
    MemoryUse use{&memory_, bindings, layoutToRun(memory_, bindings)};
    if (memoryUses_.size() < kMaxMemoryUses)
      kept = memoryUses_.emplace(bindings, std::move(use)).first;
    else
      unkeptUse_ = std::move(use);
  }
  use_ = kept != memoryUses_.end() ? &kept->second : &unkeptUse_;
  const MemoryLayout& layout = use_->layout;
  // Sized to the layout, so that a call holds the arena its plan states.
  if (!arena_.defined() || arena_.numel() != layout.arenaBytes)
    arena_ = allocate(DType::U8, {layout.arenaBytes});
  bufferTensors_.assign(buffers_.size(), Tensor());
  outputBlockBytes_ = 0;
  for (size_t b = 0; b < buffers_.size(); ++b) {
    Buffer& buffer = buffers_[b];
    buffer.shape = evaluateShape(buffer.type->shape, bindings);
    if (buffer.ownAllocation) {
      int64_t count = 1;
      for (int64_t extent : buffer.shape)
        count *= extent;
      buffer.blockOffset = outputBlockBytes_;
      size_t bytes = static_cast<size_t>(count) * dtypeSize(buffer.type->dtype);
      outputBlockBytes_ += (bytes + kOutputAlignment - 1) / kOutputAlignment * kOutputAlignment;
    } else
      bufferTensors_[b] = Tensor::borrow(arena_.dataAs<char>() + layout.offsets[buffer.planned],
                                         buffer.type->dtype, buffer.shape, {}, device());
  }
  for (Step& step : steps_) {
    if (step.kind == StepKind::Library || step.kind == StepKind::View ||
        step.kind == StepKind::Reference)
      step.boundAttrs = step.node->attrs().bound(bindings);
    if (step.kind == StepKind::Generated) step.launch = bindKernel(step.signature, bindings);
    if (options_.profile) {
      try {
        step.cost = opCost(*step.node, bindings, registry_);
      } catch (const std::exception&) {
        step.cost.reset(); // profiling must not fail a run the executable can do
      }
    }
    step.scratch =
        step.scratchPlanned < 0
            ? Tensor()
            : Tensor::borrow(arena_.dataAs<char>() + layout.offsets[step.scratchPlanned], DType::U8,
                             {layout.bytes[step.scratchPlanned]}, {}, device());
    step.indexOperands.assign(step.indexValues.size(), Tensor());
    for (size_t i = 0; i < step.indexValues.size(); ++i)
      if (step.indexValues[i])
        step.indexOperands[i] = indexTensor(step.indexValues[i]->evaluate(bindings));
    step.view.reset();
  }
  laidOutFor_ = bindings;
}

void Executable::releaseArena() {
  arena_ = Tensor();
  laidOutFor_.reset(); // the buffers pointed into it
}

const MemoryLayout& Executable::memoryLayout() const {
  static const MemoryLayout kNone;
  return use_ ? use_->layout : kNone;
}

void Executable::resetStats() {
  stats_ = {};
  for (Step& step : steps_)
    step.stats = nullptr;
}

void Executable::reportStats() {
  lastStatsReport_ = std::chrono::steady_clock::now();
  callsSinceStatsReport_ = 0;
  if (options_.instrumentation) options_.instrumentation->onKernelStats(stats_);
}

Executable::~Executable() {
  if (callsSinceStatsReport_ == 0) return;
  try {
    reportStats();
  } catch (...) {
    // Nowhere to report a failure from a destructor; the periodic reports stand.
  }
}

SymbolBindings Executable::bind(const std::vector<Tensor>& inputs) const {
  if (inputs.size() != graph_->numInputs())
    throw Error("runtime", "graph @" + graph_->name() + " takes " +
                               std::to_string(graph_->numInputs()) + " inputs, got " +
                               std::to_string(inputs.size()));
  SymbolBindings bindings;
  auto bindIfSymbol = [&](const SymExpr& expected, int64_t actual) {
    if (expected.isSymbol()) bindings.emplace(expected.symbols().front(), actual);
  };
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value* input = graph_->input(i);
    if (input->type().isIndex()) {
      if (inputs[i].numel() != 1 || isFloating(inputs[i].dtype()))
        throw Error("runtime", "index input " + valueLabel(input) +
                                   " must be a one-element integer tensor, got " +
                                   inputs[i].describe());
      bindIfSymbol(input->type().indexValue(), static_cast<int64_t>(inputs[i].at(0)));
      continue;
    }
    const TensorType& type = input->tensorType();
    if (inputs[i].rank() != type.rank() || inputs[i].dtype() != type.dtype)
      throw Error("runtime", "input " + valueLabel(input) + " is " + inputs[i].describe() +
                                 ", the graph expects " + input->type().str());
    for (size_t d = 0; d < type.rank(); ++d)
      bindIfSymbol(type.shape[d], inputs[i].size(d));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value* input = graph_->input(i);
    // `where` names the checked dim only when it disagrees, so a good call builds no strings.
    auto check = [&](const SymExpr& expected, int64_t actual, auto where) {
      int64_t value = 0;
      try {
        value = expected.evaluate(bindings);
      } catch (const std::out_of_range&) {
        throw Error("runtime", where() + " of input " + valueLabel(input) + " is " +
                                   expected.str() + ", which no input dim binds");
      }
      if (value != actual)
        throw Error("runtime", where() + " of input " + valueLabel(input) + " is " +
                                   std::to_string(actual) + " but the graph expects " +
                                   expected.str() + " = " + std::to_string(value));
    };
    if (input->type().isIndex()) {
      check(input->type().indexValue(), static_cast<int64_t>(inputs[i].at(0)),
            [] { return std::string("the value"); });
      continue;
    }
    for (size_t d = 0; d < input->tensorType().rank(); ++d)
      check(input->tensorType().shape[d], inputs[i].size(d),
            [d] { return "dim " + std::to_string(d); });
  }
  return bindings;
}

Tensor Executable::viewOf(Step& step, const Tensor& base) {
  auto& geometry = step.view;
  if (!geometry || geometry->baseShape != base.shape() || geometry->baseStrides != base.strides() ||
      geometry->baseOffset != base.offset()) {
    Tensor view = step.info->view(base, step.boundAttrs);
    geometry = Step::ViewGeometry{base.shape(),   base.strides(), view.shape(),
                                  view.strides(), base.offset(),  view.offset()};
  }
  return base.view(geometry->shape, geometry->strides, geometry->offset);
}

void Executable::execute(Step& step, const SymbolBindings& bindings, AllocationMeter& meter,
                         bool timed, bool profiled) {
  const Node& node = *step.node;
  std::vector<const Tensor*> inputs;
  inputs.reserve(step.operandSlots.size());
  for (size_t i = 0; i < step.operandSlots.size(); ++i)
    inputs.push_back(step.indexValues[i]        ? &step.indexOperands[i]
                     : step.operandSlots[i] < 0 ? nullptr
                                                : &slots_[step.operandSlots[i]]);
  std::vector<Tensor> outputs;
  outputs.reserve(step.bufferSlots.size());
  for (int slot : step.bufferSlots) // they return to their slots below
    outputs.push_back(std::move(slots_[slot]));

  int64_t liveAtStart = meter.beginSpan();
  // A profiled step on a device is timed there; on the host the steady clock serves both.
  StepTimer* deviceTimer = nullptr;
  if (profiled && options_.device) {
    if (!step.timer) step.timer = options_.device->makeStepTimer();
    deviceTimer = step.timer.get();
    deviceTimer->start();
  }
  bool hostClock = timed || (profiled && !options_.device);
  std::chrono::steady_clock::time_point start;
  if (hostClock) start = std::chrono::steady_clock::now();
  switch (step.kind) {
  case StepKind::Generated: {
    std::vector<Tensor*> outputPointers;
    for (Tensor& output : outputs)
      outputPointers.push_back(&output);
    if (options_.device)
      options_.device->launch(step.deviceKernel, step.launch, inputs, outputPointers);
    else
      launchCpuKernel(step.function, step.signature, step.launch, inputs, outputPointers);
    break;
  }
  case StepKind::Library:
    if (options_.device)
      options_.device->runLibraryKernel(node, step.boundAttrs, inputs, outputs, step.scratch);
    else
      runCpuLibraryKernel(node, step.boundAttrs, inputs, outputs);
    break;
  case StepKind::Reference:
  case StepKind::Interpret: {
    bool readsNoTensor = std::all_of(step.operandSlots.begin(), step.operandSlots.end(),
                                     [](int slot) { return slot < 0; });
    auto kept = options_.device && readsNoTensor ? step.deviceConstants.find(bindings)
                                                 : step.deviceConstants.end();
    if (kept != step.deviceConstants.end()) {
      // Read in place where only later steps read it (they never write their inputs); an
      // output, which the caller may change, is a copy.
      for (size_t r = 0; r < outputs.size(); ++r)
        if (step.bufferOwned[r])
          options_.device->copy(kept->second[r], outputs[r]);
        else
          outputs[r] = kept->second[r];
      break;
    }
    // On a device, on host copies of the inputs, the results copied back.
    std::vector<Tensor> hostInputs = onHost(inputs);
    std::vector<const Tensor*> referenceInputs = options_.device ? pointers(hostInputs) : inputs;
    std::vector<Tensor> results;
    if (step.kind == StepKind::Interpret)
      results = interpret(*node.body(), referenceInputs, bindings, registry_);
    else if (!options_.device)
      runReferenceInto(*step.info, node, inputs, step.boundAttrs, outputs);
    else
      results = runReference(*step.info, pointers(packed(referenceInputs)), step.boundAttrs,
                             resultTypes(node), bindings);
    for (size_t r = 0; r < results.size(); ++r)
      copyInto(outputs[r], results[r]);
    if (options_.device && readsNoTensor && step.deviceConstants.size() < kMaxMemoryUses) {
      std::vector<Tensor>& constants = step.deviceConstants[bindings];
      for (const Tensor& output : outputs)
        constants.push_back(copyOf(output));
    }
    break;
  }
  case StepKind::View:
    outputs = {viewOf(step, *inputs.at(0))};
    break;
  case StepKind::Fallback: {
    if (!options_.fallback)
      throw Error("runtime", "op " + node.op() + " has no implementation and no fallback is set");
    std::vector<Tensor> filled = outputs;
    options_.fallback(node, inputs, filled, bindings);
    for (size_t r = 0; r < outputs.size(); ++r) {
      Tensor& result = filled.at(r);
      if (result.data() == outputs[r].data()) continue;
      if (result.shape() != outputs[r].shape())
        throw Error("runtime", node.op() + " returned its result " + std::to_string(r) + " as " +
                                   result.describe() + ", not the " + outputs[r].describe() +
                                   " its shape function (the frontend's fake run) gave");
      // A result the callback made itself is the step's result where it lies: copying it into
      // the planned buffer cost a launch and its host time per result (cuDNN attention has five).
      bool asIs = result.dtype() == outputs[r].dtype() && result.device() == outputs[r].device();
      if (asIs)
        outputs[r] = std::move(result);
      else
        copyInto(outputs[r], result);
    }
    break;
  }
  }
  if (!step.stats) {
    step.stats = &stats_.kernels[step.kernel];
    step.stats->implementation = step.implementation;
  }
  if (deviceTimer) deviceTimer->stop();
  double hostMs =
      hostClock // the step's time, before the bookkeeping below
          ? std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count()
          : 0;
  if (profiled && !options_.device) step.profiledMs = hostMs;
  KernelStats& stats = *step.stats;
  stats.calls++;
  if (timed) {
    stats.timedCalls++;
    stats.timedMs += hostMs;
  }
  if (timed && step.kind == StepKind::Generated && options_.device)
    stats.launch = options_.device->describeLastLaunch(step.deviceKernel);
  if (timed && !options_.device &&
      (step.kind == StepKind::Generated || step.kind == StepKind::Library))
    stats.launch = cpuThreads_;
  stats.totalMs =
      stats.timedMs * double(stats.calls) / double(std::max<int64_t>(stats.timedCalls, 1));
  stats.scratchBytes = std::max(stats.scratchBytes, meter.spanPeakAbove(liveAtStart));
  if (options_.afterStep) options_.afterStep(step.kernel, outputs);

  // A random op (dropout) is not compared: its reference would draw other numbers.
  bool random = step.info && !step.info->pure;
  if (options_.check && !random &&
      (step.kind == StepKind::Generated || step.kind == StepKind::Library)) {
    // On a device, against the reference on host copies.
    std::vector<Tensor> hostInputs = onHost(inputs);
    std::vector<const Tensor*> referenceInputs = options_.device ? pointers(hostInputs) : inputs;
    std::vector<Tensor> expected;
    if (node.hasBody())
      expected = interpret(*node.body(), referenceInputs, bindings, registry_);
    else {
      if (!step.info) throw Error("runtime", "op " + node.op() + " is not registered");
      expected = runReference(*step.info, pointers(packed(referenceInputs)), node.attrs(),
                              resultTypes(node), bindings);
    }
    // A result nothing reads is not compared: a kernel may leave it out (max pooling's indices
    // in an inference graph).
    for (size_t r = 0; r < outputs.size(); ++r)
      if (node.result(r)->hasUses())
        recordError(options_.device ? options_.device->toHost(outputs[r]) : outputs[r], expected[r],
                    stats);
  }
  for (size_t r = 0; r < outputs.size(); ++r)
    slots_[step.resultSlots[r]] = std::move(outputs[r]);
}

void Executable::report(int64_t measuredPeakBytes) {
  use_->calls++;
  callsSinceStatsReport_++;
  if (measuredPeakBytes > use_->measuredPeakBytes) {
    use_->measuredPeakBytes = measuredPeakBytes;
    if (options_.instrumentation && use_ != &unkeptUse_)
      options_.instrumentation->onMemoryUse(*use_);
  }
  if (options_.instrumentation &&
      std::chrono::steady_clock::now() - lastStatsReport_ >= options_.statsReportInterval)
    reportStats();
}

Tensor Executable::allocate(DType dtype, const std::vector<int64_t>& shape) const {
  return options_.device ? options_.device->allocate(dtype, shape) : Tensor::empty(dtype, shape);
}

void Executable::allocateOutputs() {
  // On a device each allocation is a call into the embedder's allocator (torch's, through
  // Python: microseconds each, a training step's forward has dozens of outputs), so a run's
  // outputs share one: each output is a tensor within it, and the block lives until the last
  // of them dies. On the host an allocation costs little and each output is freed on its own.
  Tensor block;
  if (options_.device && outputBlockBytes_ != 0)
    block = allocate(DType::U8, {static_cast<int64_t>(outputBlockBytes_)});
  for (size_t b = 0; b < buffers_.size(); ++b) {
    const Buffer& buffer = buffers_[b];
    if (!buffer.ownAllocation)
      slots_[buffer.slot] = bufferTensors_[b];
    else if (block.defined())
      slots_[buffer.slot] =
          Tensor::within(block, buffer.blockOffset, buffer.type->dtype, buffer.shape);
    else
      slots_[buffer.slot] = allocate(buffer.type->dtype, buffer.shape);
  }
}

Tensor Executable::copyOf(const Tensor& value) const {
  if (!options_.device || value.device().isCpu()) return value.clone();
  Tensor copy = options_.device->allocate(value.dtype(), value.shape());
  options_.device->copy(value, copy);
  return copy;
}

void Executable::copyInto(Tensor& to, const Tensor& from) const {
  if (!options_.device || (to.device().isCpu() && from.device().isCpu()))
    to.copyFrom(from);
  else if (from.device().isCpu())
    options_.device->fromHost(from.dtype() == to.dtype() ? from : from.to(to.dtype()), to);
  else
    options_.device->copy(from, to);
}

std::vector<Tensor> Executable::onHost(const std::vector<const Tensor*>& tensors) const {
  std::vector<Tensor> host;
  if (!options_.device) return host;
  for (const Tensor* t : tensors)
    host.push_back(!t ? Tensor() : t->device().isCpu() ? *t : options_.device->toHost(*t));
  return host;
}

std::vector<Tensor> Executable::run(const std::vector<Tensor>& inputs) {
  waitForKernels();
  if (options_.device) options_.device->beginRun();
  SymbolBindings bindings = bind(inputs);
  if (!laidOutFor_ || *laidOutFor_ != bindings) layOut(bindings);
  // The arena is held by the call whether this call allocated it or an earlier one did.
  AllocationMeter meter(arena_.numel());
  // Reading the clock twice a step costs more than 1% of a call of small kernels: the first
  // calls are timed, then one in kTimedCallEvery (check mode times every call).
  bool timed = options_.check || callsRun_ < kTimedCallEvery || callsRun_ % kTimedCallEvery == 0;
  bool profiled = options_.profile && callsRun_ > 0 && profiledCalls_ < kProfiledCalls &&
                  (!options_.device || options_.device->canTimeSteps());
  ++callsRun_;
  // The threads a CPU run's kernels take, for its timed calls' stats: torch.set_num_threads
  // may change it between calls.
  if (timed && !options_.device) cpuThreads_ = cpuKernelThreads();
  for (size_t i = 0; i < inputs.size(); ++i)
    slots_[i] = inputs[i];
  allocateOutputs();

  for (Step& step : steps_) {
    // Built only on failure: describing a node costs more than running a small kernel.
    auto where = [&] {
      // A failed run must not keep the caller's inputs or half-computed outputs alive.
      std::fill(slots_.begin(), slots_.end(), Tensor());
      return ErrorContext{.graph = graph_->name(), .node = step.node->describe()};
    };
    try {
      execute(step, bindings, meter, timed, profiled);
    } catch (const Error& error) {
      throw error.withContext(where());
    } catch (const std::exception& error) {
      throw Error("runtime", error.what(), where());
    }
  }

  std::vector<Tensor> results;
  results.reserve(outputSlots_.size());
  for (size_t o = 0; o < outputSlots_.size(); ++o) {
    if (outputSlots_[o] < 0) {
      results.push_back(indexTensor(graph_->outputs()[o]->type().indexValue().evaluate(bindings)));
      continue;
    }
    const Tensor& value = slots_[outputSlots_[o]];
    bool asIs = outputOwned_[o] || (outputInputs_[o] >= 0 && options_.inputOutputsAsIs);
    results.push_back(asIs ? value : copyOf(value));
  }
  // Drop this run's tensors so that inputs and returned outputs are not kept alive.
  std::fill(slots_.begin(), slots_.end(), Tensor());
  if (profiled) recordProfile();
  report(meter.peakBytes());
  return results;
}

void Executable::recordProfile() {
  ++profiledCalls_;
  for (Step& step : steps_) {
    double ms = step.timer ? step.timer->milliseconds() : step.profiledMs;
    step.profile.push_back({ms, step.cost});
    // The median call (the lower one of an even count), with the cost of its own sizes.
    std::vector<Step::ProfileSample> sorted = step.profile;
    std::sort(sorted.begin(), sorted.end(),
              [](const auto& a, const auto& b) { return a.ms < b.ms; });
    const Step::ProfileSample& median = sorted[(sorted.size() - 1) / 2];
    KernelStats& stats = *step.stats;
    stats.profileRuns = static_cast<int64_t>(step.profile.size());
    stats.profileMs = median.ms;
    stats.bytes = median.cost ? std::optional(median.cost->bytes) : std::nullopt;
    stats.flops = median.cost ? std::optional(median.cost->flops) : std::nullopt;
    const Value* first = step.node->numResults() ? step.node->result(0) : nullptr;
    DType dtype = first && first->type().isTensor() ? first->tensorType().dtype : DType::F32;
    bool matrixOp = step.info && isMatrixKind(step.info->kind);
    std::optional<PeakShare> share =
        median.cost ? peakShare(*median.cost, median.ms, peaks_, dtype, matrixOp) : std::nullopt;
    stats.peakFraction = share ? std::optional(share->fraction) : std::nullopt;
    stats.bound = share ? share->bound : "";
  }
}

} // namespace loupe
