// `loupe._C`: the bridge between the Python adapter and the C++ compiler. It compiles .lir text
// with a pass pipeline (recording into a trace when asked) and runs the result on torch tensors
// without copying them: inputs are borrowed through DLPack, outputs are handed back as tensors
// that own Loupe's buffers. Ops the registry does not know call back into Python.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <unistd.h>
#include <vector>

#include "compiler/codegen/cpu/library_kernels.h"
#include "compiler/ir/error.h"
#include "compiler/ir/parser.h"
#include "compiler/ops/op_registry.h"
#include "compiler/ops/verifier.h"
#include "compiler/runtime/executable.h"
#include "inspector/bisect/bisection_record.h"
#include "inspector/bisect/bisector.h"
#include "inspector/recorder/trace_recorder.h"
#include "inspector/trace/trace_writer.h"
#include "passes/pipeline.h"

namespace nb = nanobind;

namespace loupe {
namespace {

using AnyArray = nb::ndarray<nb::device::cpu>;

struct DTypePair {
  DType loupe;
  nb::dlpack::dtype dlpack;
};

const DTypePair kDTypes[] = {
    {DType::Bool, nb::dtype<bool>()},
    {DType::U8, nb::dtype<uint8_t>()},
    {DType::I8, nb::dtype<int8_t>()},
    {DType::I16, nb::dtype<int16_t>()},
    {DType::I32, nb::dtype<int32_t>()},
    {DType::I64, nb::dtype<int64_t>()},
    {DType::F16, {static_cast<uint8_t>(nb::dlpack::dtype_code::Float), 16, 1}},
    {DType::BF16, {static_cast<uint8_t>(nb::dlpack::dtype_code::Bfloat), 16, 1}},
    {DType::F32, nb::dtype<float>()},
    {DType::F64, nb::dtype<double>()},
};

DType toLoupe(nb::dlpack::dtype dtype, size_t position) {
  for (const auto& pair : kDTypes)
    if (pair.dlpack == dtype) return pair.loupe;
  throw Error("runtime", "input " + std::to_string(position) +
                             " has a dtype Loupe does not support (DLPack code " +
                             std::to_string(dtype.code) + ", " + std::to_string(dtype.bits) +
                             " bits)");
}

nb::dlpack::dtype toDLPack(DType dtype) {
  for (const auto& pair : kDTypes)
    if (pair.loupe == dtype) return pair.dlpack;
  throw Error("runtime", "no DLPack dtype for " + std::string(dtypeName(dtype)));
}

// A Loupe tensor over a torch tensor's memory; the caller keeps the torch tensor alive.
Tensor borrowArray(const AnyArray& array, size_t position) {
  std::vector<int64_t> shape(array.ndim()), strides(array.ndim());
  for (size_t d = 0; d < array.ndim(); ++d) {
    shape[d] = static_cast<int64_t>(array.shape(d));
    strides[d] = array.stride(d);
  }
  return Tensor::borrow(array.data(), toLoupe(array.dtype(), position), std::move(shape),
                        std::move(strides));
}

// DLPack's managed tensor (the unversioned ABI of dlpack.h), which torch._C._from_dlpack takes
// over: it calls `deleter` when the torch tensor dies.
struct DLManagedTensor {
  nb::dlpack::dltensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor*);
};

// What a torch tensor made by toTorch holds on to: a copy of the Loupe tensor, so its storage
// and the shape and strides the DLTensor points into stay alive.
struct ExportedTensor {
  Tensor tensor;
  DLManagedTensor managed;
};

// A torch tensor over a Loupe tensor's memory; it keeps a copy of the Loupe tensor, and so its
// storage when the tensor owns it. For borrowed memory (the fallback's arguments, valid during
// the callback) the caller guarantees the memory outlives every use of the result.
// The capsule goes straight to torch._C._from_dlpack: torch.utils.dlpack.from_dlpack's Python
// checks and nanobind's export through __dlpack__ cost more than a small kernel, per output.
nb::object toTorch(const Tensor& tensor) {
  // Never released: it would outlive the interpreter as a static.
  static nb::handle fromDLPack =
      nb::object(nb::module_::import_("torch._C").attr("_from_dlpack")).release();
  auto* exported = new ExportedTensor{tensor, {}};
  nb::dlpack::dltensor& dl = exported->managed.dl_tensor;
  dl.data = tensor.data();
  dl.device = {static_cast<int32_t>(nb::device::cpu::value), 0};
  dl.ndim = static_cast<int32_t>(tensor.rank());
  dl.dtype = toDLPack(tensor.dtype());
  dl.shape = const_cast<int64_t*>(exported->tensor.shape().data());
  dl.strides = const_cast<int64_t*>(exported->tensor.strides().data());
  exported->managed.manager_ctx = exported;
  exported->managed.deleter = [](DLManagedTensor* self) {
    delete static_cast<ExportedTensor*>(self->manager_ctx);
  };
  // torch renames a capsule it takes over to "used_dltensor"; one it never took (an error in
  // between) still frees the tensor.
  PyObject* capsule = PyCapsule_New(&exported->managed, "dltensor", [](PyObject* object) {
    if (PyCapsule_IsValid(object, "dltensor")) {
      auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(object, "dltensor"));
      managed->deleter(managed);
    }
  });
  if (!capsule) {
    delete exported;
    throw nb::python_error();
  }
  return fromDLPack(nb::steal(capsule));
}

std::vector<std::string> withoutDisabled(std::vector<std::string> names,
                                         const std::vector<std::string>& disabled) {
  for (const auto& name : disabled)
    createPass(name); // a misspelt pass name is an error, not a silent no-op
  std::erase_if(names, [&](const std::string& name) {
    return std::find(disabled.begin(), disabled.end(), name) != disabled.end();
  });
  return names;
}

// A user stack frame as Python hands it over: (file, line, function, source line).
using PyFrame = std::tuple<std::string, int, std::string, std::string>;

// One process's connection to a trace file.
class Trace {
public:
  explicit Trace(const std::string& path) : writer_(path) {}

  int64_t beginRun(const std::string& command, const std::string& torchVersion,
                   const std::string& optionsJson) {
    RunInfo run;
    run.pid = static_cast<int64_t>(getpid());
    run.command = command;
    run.torch_version = torchVersion;
    run.loupe_version = LOUPE_VERSION;
    run.options_json = optionsJson;
    return writer_.beginRun(run);
  }

  int64_t beginCompile(int64_t runId, const CompileInfo& compile) {
    return writer_.beginCompile(runId, compile);
  }

  void finishCompile(int64_t compileId, const std::string& status,
                     std::optional<std::string> message, std::optional<std::string> pass,
                     std::optional<double> wallMs) {
    writer_.finishCompile(compileId, CompileOutcome{status, message, pass, wallMs});
  }

  // A graph the adapter could not convert to .lir: kept as the compile's failed "import" pass,
  // `text` being the FX graph's code.
  void recordRejectedGraph(int64_t compileId, const std::string& text, const std::string& error) {
    TraceRecorder(writer_, compileId).recordRejectedInput(text, nullptr, error);
  }

  void recordWarning(int64_t runId, const std::string& message, std::optional<int64_t> compileId) {
    writer_.recordWarning(runId, WarningRecord{.compile_id = compileId, .message = message});
  }

  void recordGraphBreak(int64_t runId, std::optional<int64_t> compileId,
                        const std::string& frameName, const std::string& reason,
                        const std::vector<PyFrame>& userStack) {
    writer_.recordGraphBreak(runId, GraphBreakRecord{.compile_id = compileId,
                                                     .frame_name = frameName,
                                                     .reason = reason,
                                                     .user_stack = toStack(userStack)});
  }

  // (kind, expr, user stack) per guard, in one transaction.
  void recordGuards(
      int64_t compileId,
      const std::vector<std::tuple<std::string, std::string, std::vector<PyFrame>>>& guards) {
    std::vector<GuardRecord> records;
    records.reserve(guards.size());
    for (const auto& [kind, expr, userStack] : guards)
      records.push_back(GuardRecord{.kind = kind, .expr = expr, .user_stack = toStack(userStack)});
    writer_.recordGuards(compileId, records);
  }

  // Dynamo reports a failed guard on a later call, after the guard was recorded.
  int64_t markGuardFailed(int64_t compileId, const std::string& kind, const std::string& expr) {
    return writer_.markGuardFailed(compileId, kind, expr);
  }

  void recordRecompile(int64_t compileId, const std::string& previousCompileKey,
                       const std::string& reason, std::optional<std::string> failedGuard) {
    writer_.recordRecompile(compileId, RecompileRecord{.previous_compile_key = previousCompileKey,
                                                       .reason = reason,
                                                       .failed_guard = std::move(failedGuard)});
  }

  TraceWriter& writer() { return writer_; }
  const std::string& path() const { return writer_.path(); }

private:
  static std::vector<StackFrame> toStack(const std::vector<PyFrame>& frames) {
    std::vector<StackFrame> stack;
    for (const auto& [file, line, function, code] : frames)
      stack.push_back(StackFrame{.file = file, .line = line, .function = function, .code = code});
    return stack;
  }

  TraceWriter writer_;
};

// Calls the Python fallback with (the node's first result name, op, input tensors, output
// tensors, the run's symbol values by name); it fills the outputs in place. Tensors handed over
// are views of Loupe's memory, valid during the call.
using PythonFallback =
    std::function<void(const std::string&, const std::string&, nb::list, nb::list, nb::dict)>;

// The runtime's fallback for a Python one: the tensors are lent as views during the call.
FallbackFn toFallbackFn(PythonFallback fallback) {
  if (!fallback) return {};
  return [fallback](const Node& node, const std::vector<const Tensor*>& inputs,
                    std::vector<Tensor>& outputs, const SymbolBindings& bindings) {
    nb::gil_scoped_acquire gil;
    nb::list in, out;
    for (const Tensor* t : inputs)
      in.append(t ? toTorch(*t) : nb::none());
    for (const Tensor& t : outputs)
      out.append(toTorch(t));
    nb::dict symbols;
    for (const auto& [name, value] : bindings)
      symbols[nb::str(name.c_str())] = value;
    fallback(node.numResults() ? node.result()->name() : "", node.op(), in, out, symbols);
  };
}

class CompiledGraph {
public:
  CompiledGraph(const std::string& lir, const std::vector<std::string>& pipeline, bool check,
                PythonFallback fallback, Trace* trace, int64_t compileId,
                const std::string& failureStatus, int injectFault)
      : trace_(trace), compileId_(compileId), failureStatus_(failureStatus) {
    auto start = std::chrono::steady_clock::now();
    try {
      compile(lir, pipeline, check, std::move(fallback), injectFault);
      compileMs_ =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count();
      if (trace_) trace_->finishCompile(compileId_, "ok", std::nullopt, std::nullopt, compileMs_);
    } catch (const std::exception& e) {
      recordFailure(e);
      throw;
    }
  }

  // The generated kernels are built in the background (the host compiler runs while Dynamo
  // finishes its own work); this waits for them. The compile's wall time in the trace then
  // adds the build's. A failed build is recorded as the compile's failure and raised, so the
  // caller can run the graph eagerly; every later call raises it again.
  void waitForKernels() {
    if (build_ == Build::Ready) return;
    try {
      {
        nb::gil_scoped_release noGil;
        executable_->waitForKernels();
      }
      build_ = Build::Ready;
      if (trace_) {
        // Each generated kernel: from the kernel cache or built, and how long.
        for (const auto& [name, build] : executable_->kernelBuilds())
          trace_->writer().recordKernelBuild(compileId_, name, build.fromCache, build.buildMs);
        trace_->finishCompile(compileId_, "ok", std::nullopt, std::nullopt,
                              compileMs_ + executable_->kernelBuildMs());
      }
    } catch (const std::exception& e) {
      if (build_ == Build::Running) recordFailure(e);
      build_ = Build::Failed;
      throw;
    }
  }

  // `inputsAsNone`: an output that is a graph input comes back as None, for a caller that
  // holds that input already (output_inputs says which); otherwise as a copy.
  nb::list run(const std::vector<AnyArray>& arrays, int threads, bool inputsAsNone) {
    waitForKernels();
    setCpuLibraryThreads(threads);
    std::vector<Tensor> inputs;
    inputs.reserve(arrays.size());
    for (size_t i = 0; i < arrays.size(); ++i)
      inputs.push_back(borrowArray(arrays[i], i));
    std::vector<Tensor> outputs;
    {
      nb::gil_scoped_release noGil;
      outputs = executable_->run(inputs);
    }
    if (trace_ && !arenaRecorded_) {
      recorder_->recordMeasuredArena(executable_->arenaBytes());
      arenaRecorded_ = true;
    }
    if (trace_ && check_)
      for (const auto& [name, s] : executable_->stats().kernels)
        trace_->writer().recordKernelMaxError(compileId_, name, s.maxAbsError);
    nb::list result;
    const std::vector<int>& outputInputs = executable_->outputInputs();
    for (size_t o = 0; o < outputs.size(); ++o) {
      if (outputInputs[o] < 0)
        result.append(toTorch(outputs[o]));
      else // the caller's memory, borrowed: never handed out as is
        result.append(inputsAsNone ? nb::none() : toTorch(outputs[o].clone()));
    }
    return result;
  }

  const std::vector<int>& outputInputs() const { return executable_->outputInputs(); }

  // {kernel name: (implementation, calls, total ms, max abs error)}
  nb::dict stats() const {
    nb::dict result;
    for (const auto& [name, s] : executable_->stats().kernels)
      result[nb::str(name.c_str())] =
          nb::make_tuple(s.implementation, s.calls, s.totalMs, s.maxAbsError);
    return result;
  }

private:
  // The failed pass and its input graph are already recorded; the compile's outcome says which
  // pass failed and why.
  void recordFailure(const std::exception& e) {
    if (!trace_) return;
    const auto* error = dynamic_cast<const Error*>(&e);
    std::optional<std::string> pass;
    if (error && !error->context().pass.empty()) pass = error->context().pass;
    if (inputRejected_) pass = "import";
    trace_->finishCompile(compileId_, failureStatus_, e.what(), pass, std::nullopt);
  }

  void compile(const std::string& lir, const std::vector<std::string>& pipeline, bool check,
               PythonFallback fallback, int injectFault) {
    if (trace_) recorder_ = std::make_unique<TraceRecorder>(trace_->writer(), compileId_);
    try {
      graph_ = parseGraph(lir, "<fx graph>");
      verify(*graph_);
    } catch (const std::exception& e) {
      // No pass has run: the trace gets the graph that was rejected, with the error.
      inputRejected_ = true;
      if (recorder_) recorder_->recordRejectedInput(lir, graph_.get(), e.what());
      throw;
    }
    Plan plan;
    PipelineOptions pipelineOptions;
    pipelineOptions.injectFaultAt = injectFault;
    InstrumentationList instrumentation;
    if (recorder_) instrumentation.add(recorder_.get());
    PassManager manager;
    addPasses(manager, pipeline);
    PassContext ctx(pipelineOptions, instrumentation, plan);
    manager.run(*graph_, ctx);

    ExecutableOptions options;
    options.check = check_ = check;
    options.fallback = toFallbackFn(std::move(fallback));
    options.inputOutputsAsIs = true;         // run copies them only when the caller wants tensors
    options.buildKernelsInBackground = true; // see waitForKernels
    executable_ = std::make_unique<Executable>(*graph_, plan, std::move(options));
  }

  Trace* trace_;
  int64_t compileId_;
  std::string failureStatus_;
  double compileMs_ = 0; // the constructor's: passes, code generation, the build started
  // The kernel build's outcome, recorded in the trace once it is known.
  enum class Build { Running, Ready, Failed } build_ = Build::Running;
  std::unique_ptr<Graph> graph_;
  std::unique_ptr<TraceRecorder> recorder_;
  std::unique_ptr<Executable> executable_;
  bool arenaRecorded_ = false;
  bool inputRejected_ = false; // the graph failed to parse or verify: no pass ran
  bool check_ = false;         // check mode: each run's kernel errors go into the trace
};

// Calls Python with (one line describing the trial, trials done, trials expected).
using PythonProgress = std::function<void(const std::string&, int, int)>;

// Bisects one graph against reference outputs (eager's); records the bisection against the
// compile when a trace is given. Returns the result as a dict (docs/bisect.md).
nb::dict bisectGraph(const std::string& lir, const std::vector<std::string>& pipeline,
                     const std::vector<AnyArray>& inputArrays,
                     const std::vector<AnyArray>& referenceArrays, PythonFallback fallback,
                     int injectFault, std::optional<double> rtol, std::optional<double> atol,
                     Trace* trace, int64_t compileId, PythonProgress progress) {
  auto graph = parseGraph(lir, "<fx graph>");
  verify(*graph);
  std::vector<Tensor> inputs, reference;
  for (size_t i = 0; i < inputArrays.size(); ++i)
    inputs.push_back(borrowArray(inputArrays[i], i));
  for (size_t i = 0; i < referenceArrays.size(); ++i)
    reference.push_back(borrowArray(referenceArrays[i], i));
  BisectOptions options;
  options.pipeline = pipeline;
  options.pipelineOptions.injectFaultAt = injectFault;
  if (rtol || atol)
    options.tolerance = Tolerance{rtol.value_or(Tolerance{}.rtol), atol.value_or(Tolerance{}.atol)};
  options.fallback = toFallbackFn(std::move(fallback));
  if (progress)
    options.progress = [&progress](const BisectTrial& trial, int done, int estimated) {
      std::string what = trial.phase == "full" ? "full pipeline"
                         : trial.phase == "pass"
                             ? "passes up to " + trial.stopAfter
                             : "decisions 1.." + std::to_string(trial.decisionLimit);
      progress(what + (trial.diverged ? ": differs" : ": matches"), done, estimated);
    };
  BisectResult result = bisect(*graph, inputs, reference, options);
  BisectionRecord record = bisectionRecordOf(result, injectFault);
  if (trace) trace->writer().recordBisection(compileId, record);

  nb::dict out;
  out["status"] = record.status;
  out["diverged"] = result.diverged;
  out["report"] = describeResult(result);
  out["first_bad_pass"] = result.firstBadPass;
  out["total_decisions"] = result.totalDecisions;
  out["max_abs_error"] = result.full.maxAbsError;
  out["trials"] = result.trials.size();
  out["decision"] = nb::none();
  if (const auto& d = result.culprit) {
    nb::dict decision;
    decision["ordinal"] = d->ordinal;
    decision["pass"] = d->pass;
    decision["kind"] = d->kind;
    decision["description"] = d->description;
    decision["nodes"] = d->nodes;
    out["decision"] = decision;
  }
  nb::list nodes;
  for (const CulpritNodeRecord& n : record.culprit_nodes) {
    nb::dict node;
    node["name"] = n.name;
    node["op"] = n.op;
    node["file"] = n.file;
    node["line"] = n.line;
    node["module_path"] = n.module_path;
    node["fused_members"] = n.fused_members;
    nodes.append(node);
  }
  out["nodes"] = nodes;
  return out;
}

} // namespace
} // namespace loupe

NB_MODULE(_C, m) {
  using namespace loupe;
  m.doc() = "Loupe's compiler and runtime, for the torch.compile backend";
  m.attr("__version__") = LOUPE_VERSION;
  // Traces stay open in a module-level cache until the interpreter exits, after nanobind's
  // leak check has run.
  nb::set_leak_warnings(false);

  // Loupe's errors keep their kind ("parse", "shape", "pipeline", ...) and context in Python.
  static nb::exception<Error> loupeError(m, "LoupeError");

  m.def("registered_ops", [] {
    std::vector<std::string> names;
    for (const OpInfo* info : OpRegistry::global().all())
      names.push_back(info->name);
    return names;
  });
  m.def("default_pipeline", &defaultPipeline);
  m.def("all_passes", [] {
    std::vector<std::string> names;
    for (const auto& entry : allPasses())
      names.emplace_back(entry.name);
    return names;
  });
  m.def(
      "resolve_pipeline",
      [](const std::string& text, const std::vector<std::string>& disabled) {
        return withoutDisabled(parsePipeline(text), disabled);
      },
      nb::arg("pipeline") = "default", nb::arg("disable") = std::vector<std::string>{},
      "Pass names of a pipeline ('default' or 'a,b,c') less the disabled ones; raises "
      "LoupeError naming the valid passes for an unknown name.");

  nb::class_<CompileInfo>(m, "CompileInfo")
      .def(nb::init<>())
      .def_rw("compile_key", &CompileInfo::compile_key)
      .def_rw("frame_name", &CompileInfo::frame_name)
      .def_rw("frame_file", &CompileInfo::frame_file)
      .def_rw("frame_line", &CompileInfo::frame_line)
      .def_rw("graph_kind", &CompileInfo::graph_kind)
      .def_rw("input_signature_json", &CompileInfo::input_signature_json);

  nb::class_<Trace>(m, "Trace")
      .def(nb::init<const std::string&>(), nb::arg("path"))
      .def_prop_ro("path", &Trace::path)
      .def("begin_run", &Trace::beginRun, nb::arg("command"), nb::arg("torch_version"),
           nb::arg("options_json") = "{}")
      .def("begin_compile", &Trace::beginCompile, nb::arg("run_id"), nb::arg("compile"))
      .def("finish_compile", &Trace::finishCompile, nb::arg("compile_id"), nb::arg("status"),
           nb::arg("message") = nb::none(), nb::arg("failed_pass") = nb::none(),
           nb::arg("wall_ms") = nb::none())
      .def("record_rejected_graph", &Trace::recordRejectedGraph, nb::arg("compile_id"),
           nb::arg("text"), nb::arg("error"))
      .def("record_warning", &Trace::recordWarning, nb::arg("run_id"), nb::arg("message"),
           nb::arg("compile_id").none() = nb::none())
      .def("record_graph_break", &Trace::recordGraphBreak, nb::arg("run_id"),
           nb::arg("compile_id").none(), nb::arg("frame_name"), nb::arg("reason"),
           nb::arg("user_stack"),
           "user_stack: (file, line, function, code) tuples, outermost first; compile_id: the "
           "compile of the graph before the break, or None for a run-level break.")
      .def("record_guards", &Trace::recordGuards, nb::arg("compile_id"), nb::arg("guards"),
           "Records (kind, expr, user_stack) per guard in one transaction.")
      .def("mark_guard_failed", &Trace::markGuardFailed, nb::arg("compile_id"), nb::arg("kind"),
           nb::arg("expr"),
           "Sets failed=1 on the compile's guards with this kind and expr; returns how many.")
      .def("record_recompile", &Trace::recordRecompile, nb::arg("compile_id"),
           nb::arg("previous_compile_key"), nb::arg("reason"),
           nb::arg("failed_guard").none() = nb::none());

  m.def("bisect", &bisectGraph, nb::arg("lir"), nb::arg("pipeline"), nb::arg("inputs"),
        nb::arg("reference"), nb::arg("fallback").none() = nb::none(), nb::arg("inject_fault") = -1,
        nb::arg("rtol").none() = nb::none(), nb::arg("atol").none() = nb::none(),
        nb::arg("trace").none() = nb::none(), nb::arg("compile_id") = 0,
        nb::arg("progress").none() = nb::none(),
        "Finds the pass and the decision that make the compiled graph's outputs differ from "
        "`reference` (eager's) on `inputs`; records the bisection against compile_id when a "
        "trace is given. Returns a dict: status, diverged, report, decision, nodes, ...");

  nb::class_<CompiledGraph>(m, "CompiledGraph")
      .def(nb::init<const std::string&, const std::vector<std::string>&, bool, PythonFallback,
                    Trace*, int64_t, const std::string&, int>(),
           nb::arg("lir"), nb::arg("pipeline"), nb::arg("check") = false,
           nb::arg("fallback").none() = nb::none(), nb::arg("trace").none() = nb::none(),
           nb::arg("compile_id") = 0, nb::arg("failure_status") = "eager_fallback",
           nb::arg("inject_fault") = -1,
           "Parses, verifies and compiles one graph and finishes its compile record in the "
           "trace: 'ok', or failure_status with the error and the failed pass (then raises "
           "LoupeError). inject_fault=N (a testing aid) miscompiles it after decision N.")
      .def("wait_for_kernels", &CompiledGraph::waitForKernels,
           "Waits for the generated kernels, built in the background after the constructor "
           "returns; a failed build is recorded as the compile's failure and raises LoupeError "
           "(then and on every later call, run included).")
      .def("run", &CompiledGraph::run, nb::arg("inputs"), nb::arg("threads") = 0,
           nb::arg("inputs_as_none") = false,
           "Runs on CPU tensors (or their DLPack capsules) in graph-input order, with at most "
           "`threads` BLAS threads (0: unchanged); returns the outputs as new tensors, "
           "which share memory with no input and no other output. With inputs_as_none, an "
           "output that is a graph input comes back as None instead of a copy (see "
           "output_inputs).")
      .def_prop_ro("output_inputs", &CompiledGraph::outputInputs,
                   "Per output: the position of the graph input it is, or -1.")
      .def("stats", &CompiledGraph::stats);
}
