#include "compiler/runtime/executable.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>

#include "compiler/codegen/cpu/cpu_kernel_abi.h"
#include "compiler/codegen/cpu/library_kernels.h"
#include "compiler/ir/error.h"
#include "compiler/pass/memory_layout.h"

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
                      const std::vector<const Tensor*>& inputs, const SymbolBindings& bindings,
                      std::vector<Tensor>& outputs) {
  if (!info.reference) throw Error("runtime", node.op() + " has no reference implementation");
  std::vector<Tensor> contiguousInputs = packed(inputs);
  info.reference(pointers(contiguousInputs), node.attrs().bound(bindings), outputs);
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
  CpuKernelSignature signature;
};

Executable::Executable(const Graph& graph, const Plan& plan, ExecutableOptions options)
    : graph_(graph.clone()), options_(std::move(options)),
      registry_(options_.registry ? *options_.registry : OpRegistry::global()) {
  std::map<std::string, const KernelChoice*> choices;
  for (const KernelChoice& choice : plan.kernels)
    choices[choice.name] = &choice;

  std::vector<GeneratedKernel> generated;
  for (const Node* node : graph_->nodes()) {
    Step step{node, StepKind::Reference, node->describe(), {}, registry_.find(node->op())};
    const KernelChoice* choice = nullptr;
    if (const Attribute* name = node->attrs().find("kernel"))
      if (const auto* text = std::get_if<std::string>(name); text && choices.count(*text)) {
        choice = choices[*text];
        step.kernel = *text;
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
      step.signature = describeCpuKernel(*node, registry_);
      // The plan's source is what the trace shows, so that is what runs; it was generated with
      // the built-in ops, so a custom registry regenerates it.
      if (!choice->source.empty() && !options_.registry)
        generated.push_back({cpuKernelEntry(step.kernel), choice->source});
      else
        generated.push_back(generateCpuKernel(*node, step.kernel, registry_));
    } else if (choice && choice->kind == KernelKind::Library &&
               hasCpuLibraryKernel(*node, nullptr)) {
      step.kind = StepKind::Library;
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

  std::vector<CpuKernelFn> functions = CpuCompiler(options_.compiler).load(generated);
  auto next = functions.begin();
  for (Step& step : steps_)
    if (step.kind == StepKind::Generated) step.function = *next++;
}

Executable::~Executable() = default;

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
    auto check = [&](const SymExpr& expected, int64_t actual, const std::string& where) {
      int64_t value = 0;
      try {
        value = expected.evaluate(bindings);
      } catch (const std::out_of_range&) {
        throw Error("runtime", where + " of input " + valueLabel(input) + " is " + expected.str() +
                                   ", which no input dim binds");
      }
      if (value != actual)
        throw Error("runtime", where + " of input " + valueLabel(input) + " is " +
                                   std::to_string(actual) + " but the graph expects " +
                                   expected.str() + " = " + std::to_string(value));
    };
    if (input->type().isIndex()) {
      check(input->type().indexValue(), static_cast<int64_t>(inputs[i].at(0)), "the value");
      continue;
    }
    for (size_t d = 0; d < input->tensorType().rank(); ++d)
      check(input->tensorType().shape[d], inputs[i].size(d), "dim " + std::to_string(d));
  }
  return bindings;
}

void Executable::execute(Step& step, const SymbolBindings& bindings,
                         std::map<const Value*, Tensor>& values) {
  const Node& node = *step.node;
  std::vector<Tensor> indexOperands; // keeps 0-d tensors for index operands alive
  indexOperands.reserve(node.numOperands());
  std::vector<const Tensor*> inputs;
  for (const Value* operand : node.operands()) {
    if (!operand)
      inputs.push_back(nullptr);
    else if (operand->type().isIndex()) {
      indexOperands.push_back(indexTensor(operand->type().indexValue().evaluate(bindings)));
      inputs.push_back(&indexOperands.back());
    } else
      inputs.push_back(&values.at(operand));
  }
  std::vector<Tensor> outputs;
  for (const Value* result : node.results())
    if (values.count(result)) outputs.push_back(values[result]);

  auto start = std::chrono::steady_clock::now();
  switch (step.kind) {
  case StepKind::Generated: {
    std::vector<Tensor*> outputPointers;
    for (Tensor& output : outputs)
      outputPointers.push_back(&output);
    launchCpuKernel(step.function, step.signature, bindings, inputs, outputPointers);
    break;
  }
  case StepKind::Library:
    runCpuLibraryKernel(node, node.attrs().bound(bindings), inputs, outputs);
    break;
  case StepKind::Reference:
    runReferenceInto(*step.info, node, inputs, bindings, outputs);
    break;
  case StepKind::Interpret: {
    std::vector<Tensor> results = interpret(*node.body(), inputs, bindings, registry_);
    for (size_t r = 0; r < results.size(); ++r)
      outputs[r].copyFrom(results[r]);
    break;
  }
  case StepKind::View:
    outputs = {step.info->view(*inputs.at(0), node.attrs().bound(bindings))};
    break;
  case StepKind::Fallback: {
    if (!options_.fallback)
      throw Error("runtime", "op " + node.op() + " has no implementation and no fallback is set");
    std::vector<Tensor> filled = outputs;
    options_.fallback(node, inputs, filled);
    for (size_t r = 0; r < outputs.size(); ++r)
      if (filled.at(r).data() != outputs[r].data()) outputs[r].copyFrom(filled[r]);
    break;
  }
  }
  KernelStats& stats = stats_.kernels[step.kernel];
  stats.implementation = step.implementation;
  stats.calls++;
  stats.totalMs +=
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (options_.afterStep) options_.afterStep(step.kernel, outputs);

  if (options_.check && (step.kind == StepKind::Generated || step.kind == StepKind::Library)) {
    std::vector<Tensor> expected;
    if (node.hasBody())
      expected = interpret(*node.body(), inputs, bindings, registry_);
    else {
      if (!step.info) throw Error("runtime", "op " + node.op() + " is not registered");
      expected = runReference(*step.info, pointers(packed(inputs)), node.attrs(), resultTypes(node),
                              bindings);
    }
    for (size_t r = 0; r < outputs.size(); ++r)
      recordError(outputs[r], expected[r], stats);
  }
  for (size_t r = 0; r < outputs.size(); ++r)
    values[node.result(r)] = outputs[r];
}

std::vector<Tensor> Executable::run(const std::vector<Tensor>& inputs) {
  SymbolBindings bindings = bind(inputs);
  std::map<const Value*, Tensor> values;
  for (size_t i = 0; i < inputs.size(); ++i)
    values[graph_->input(i)] = inputs[i];

  // Which arena buffer each value lives in (a view lives in its input's), and until when.
  std::map<const Value*, const Value*> root;
  std::map<const Value*, int> lastUse;
  std::set<const Value*> outputs(graph_->outputs().begin(), graph_->outputs().end());
  for (size_t s = 0; s < steps_.size(); ++s) {
    const Node& node = *steps_[s].node;
    for (const Value* operand : node.operands())
      if (operand && root.count(operand)) lastUse[root[operand]] = static_cast<int>(s);
    for (const Value* result : node.results()) {
      if (!result->type().isTensor()) continue;
      const Value* viewed = steps_[s].kind == StepKind::View ? node.operand(0) : nullptr;
      root[result] = !viewed ? result : root.count(viewed) ? root[viewed] : viewed;
      lastUse.emplace(root[result], static_cast<int>(s));
    }
  }
  // Views returned as outputs are copied at the very end, so their buffers must last until then.
  for (const Value* output : graph_->outputs())
    if (root.count(output)) lastUse[root[output]] = static_cast<int>(steps_.size());
  std::vector<BufferInterval> intervals;
  std::vector<const Value*> arenaValues;
  for (size_t s = 0; s < steps_.size(); ++s) {
    const Node& node = *steps_[s].node;
    for (const Value* result : node.results()) {
      if (!result->type().isTensor() || steps_[s].kind == StepKind::View) continue;
      const TensorType& type = result->tensorType();
      std::vector<int64_t> shape = evaluateShape(type.shape, bindings);
      if (outputs.count(result)) {
        values[result] = Tensor::empty(type.dtype, shape);
        continue;
      }
      int64_t bytes = static_cast<int64_t>(dtypeSize(type.dtype));
      for (int64_t size : shape)
        bytes *= size;
      intervals.push_back({bytes, static_cast<int>(s), lastUse[result]});
      arenaValues.push_back(result);
    }
  }
  ArenaLayout layout = layoutArena(intervals);
  if (!arena_.defined() || arena_.numel() < layout.arenaBytes)
    arena_ = Tensor::empty(DType::U8, {layout.arenaBytes});
  for (size_t b = 0; b < arenaValues.size(); ++b) {
    const TensorType& type = arenaValues[b]->tensorType();
    values[arenaValues[b]] = Tensor::borrow(arena_.dataAs<char>() + layout.offsets[b], type.dtype,
                                            evaluateShape(type.shape, bindings));
  }

  for (Step& step : steps_) {
    try {
      execute(step, bindings, values);
    } catch (const Error& error) {
      throw error.withContext(ErrorContext{.graph = graph_->name(), .node = step.node->describe()});
    } catch (const std::exception& error) {
      throw Error("runtime", error.what(),
                  ErrorContext{.graph = graph_->name(), .node = step.node->describe()});
    }
  }

  std::vector<Tensor> results;
  std::set<const Value*> returned;
  for (const Value* output : graph_->outputs()) {
    if (output->type().isIndex()) {
      results.push_back(indexTensor(output->type().indexValue().evaluate(bindings)));
      continue;
    }
    // Only outputs computed straight into their own allocation may be handed out as they are.
    bool owned = output->definingNode() && root.count(output) && root[output] == output &&
                 returned.insert(output).second;
    results.push_back(owned ? values.at(output) : values.at(output).clone());
  }
  return results;
}

} // namespace loupe
