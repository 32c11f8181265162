// `loupe run`: compile a .lir graph with the pipeline and execute it on the CPU, on inputs
// read from .npy files or generated at random; optionally in check mode and recorded in a trace.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <random>
#include <unistd.h>

#include "compiler/ir/error.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/verifier.h"
#include "compiler/ops/op_registry.h"
#include "compiler/runtime/executable.h"
#include "compiler/runtime/npy.h"
#include "inspector/cli/commands.h"
#include "inspector/recorder/trace_recorder.h"
#include "inspector/trace/trace_writer.h"
#include "passes/pipeline.h"

namespace loupe::cli {

namespace {

[[noreturn]] void usageError(const std::string& message) {
  throw Error("usage", message);
}

// "s0=8" → bindings; "x=a.npy" / "a.npy" → named or positional inputs.
SymbolBindings parseSymbols(const std::vector<std::string>& items) {
  SymbolBindings bindings;
  for (const auto& item : items) {
    auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      usageError("--symbol expects NAME=INT, got '" + item + "'");
    try {
      bindings[item.substr(0, eq)] = std::stoll(item.substr(eq + 1));
    } catch (const std::exception&) {
      usageError("--symbol expects NAME=INT, got '" + item + "'");
    }
  }
  return bindings;
}

Tensor randomTensor(const TensorType& type, const std::vector<int64_t>& shape,
                    std::mt19937_64& rng) {
  Tensor t = Tensor::empty(type.dtype, shape);
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  std::uniform_int_distribution<int64_t> small(0, 7); // small non-negative ints work as indices
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (isFloating(type.dtype))
      t.set(i, real(rng));
    else if (type.dtype == DType::Bool)
      t.set(i, static_cast<double>(small(rng) & 1));
    else
      t.set(i, static_cast<double>(small(rng)));
  }
  return t;
}

std::vector<Tensor> prepareInputs(const Graph& graph, const RunOptions& options) {
  std::map<std::string, std::string> named;
  std::vector<std::string> positional;
  for (const auto& item : options.inputs) {
    auto eq = item.find('=');
    if (eq != std::string::npos && eq > 0)
      named[item.substr(0, eq)] = item.substr(eq + 1);
    else
      positional.push_back(item);
  }
  if (positional.size() > graph.numInputs())
    usageError(std::to_string(positional.size()) + " positional inputs given for a graph of " +
               std::to_string(graph.numInputs()));
  for (const auto& [name, path] : named) {
    bool found = false;
    for (const auto& in : graph.inputs())
      found |= in->name() == name;
    if (!found) usageError("the graph has no input named %" + name);
  }

  SymbolBindings bindings = parseSymbols(options.symbols);
  std::vector<Tensor> inputs(graph.numInputs());
  std::vector<bool> given(graph.numInputs(), false);
  for (size_t i = 0; i < graph.numInputs(); ++i) {
    const Value* in = graph.input(i);
    std::string path = i < positional.size()     ? positional[i]
                       : named.count(in->name()) ? named[in->name()]
                                                 : "";
    if (path.empty()) continue;
    inputs[i] = readNpy(path);
    given[i] = true;
    // Symbols bound by given inputs fix the shapes of the random ones.
    if (in->type().isTensor()) {
      const auto& shape = in->tensorType().shape;
      for (size_t d = 0; d < shape.size() && d < inputs[i].rank(); ++d)
        if (shape[d].isSymbol()) bindings.emplace(shape[d].str(), inputs[i].size(d));
    } else if (in->type().indexValue().isSymbol()) {
      bindings.emplace(in->type().indexValue().str(), static_cast<int64_t>(inputs[i].at(0)));
    }
  }
  std::mt19937_64 rng(options.seed);
  for (size_t i = 0; i < graph.numInputs(); ++i) {
    if (given[i]) continue;
    const Value* in = graph.input(i);
    if (in->type().isIndex()) {
      const SymExpr& value = in->type().indexValue();
      int64_t v;
      try {
        v = value.evaluate(bindings);
      } catch (const std::out_of_range&) {
        usageError("index input %" + in->name() + " is " + value.str() +
                   ": bind it with --symbol " + value.str() + "=N or give it as an input");
      }
      inputs[i] = Tensor::fromDoubles({static_cast<double>(v)}, DType::I64, {});
      continue;
    }
    std::vector<int64_t> shape;
    for (const auto& d : in->tensorType().shape) {
      try {
        shape.push_back(d.evaluate(bindings));
      } catch (const std::out_of_range&) {
        usageError("input %" + in->name() + " has the symbolic dim " + d.str() +
                   ": give the input as .npy or bind its symbols with --symbol NAME=N");
      }
    }
    inputs[i] = randomTensor(in->tensorType(), shape, rng);
  }
  return inputs;
}

void printTensorSummary(const std::string& label, const Tensor& t) {
  std::cout << label << ": " << t.describe();
  int64_t shown = std::min<int64_t>(t.numel(), 6);
  std::cout << " [";
  for (int64_t i = 0; i < shown; ++i) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.6g", t.at(i));
    std::cout << (i ? ", " : "") << buffer;
  }
  std::cout << (t.numel() > shown ? ", ...]" : "]") << "\n";
}

} // namespace

int runRun(const RunOptions& options) {
  // Check the command line before reading anything: an unknown pass is a usage error.
  for (const auto& pass : options.pipeline) {
    try {
      createPass(pass);
    } catch (const Error& e) {
      usageError(e.message());
    }
  }
  auto graphs = parseFile(options.file);
  if (graphs.empty()) throw Error("input", "no graph in " + options.file);
  Graph& graph = *graphs.front();
  verify(graph);
  std::vector<Tensor> inputs = prepareInputs(graph, options);

  std::unique_ptr<TraceWriter> writer;
  int64_t compileId = 0;
  if (!options.trace.empty()) {
    writer = std::make_unique<TraceWriter>(options.trace);
    RunInfo run;
    run.pid = static_cast<int64_t>(getpid());
    run.command = "loupe run " + options.file;
    run.loupe_version = LOUPE_VERSION;
    int64_t runId = writer->beginRun(run);
    CompileInfo compile;
    compile.frame_name = graph.name();
    compile.frame_file = options.file;
    compile.graph_kind = "graph";
    compileId = writer->beginCompile(runId, compile);
  }

  Plan plan;
  std::unique_ptr<TraceRecorder> recorder;
  auto start = std::chrono::steady_clock::now();
  if (!options.noCompile) {
    PipelineOptions pipelineOptions;
    InstrumentationList instrumentation;
    if (writer) {
      recorder = std::make_unique<TraceRecorder>(*writer, compileId);
      instrumentation.add(recorder.get());
    }
    PassManager manager;
    addPasses(manager, options.pipeline.empty() ? defaultPipeline() : options.pipeline);
    PassContext ctx(pipelineOptions, instrumentation, plan);
    try {
      manager.run(graph, ctx);
    } catch (const std::exception& e) {
      // The trace keeps the failure (the failed pass and its graph are already recorded).
      if (writer) {
        const auto* error = dynamic_cast<const Error*>(&e);
        std::optional<std::string> pass;
        if (error && !error->context().pass.empty()) pass = error->context().pass;
        writer->finishCompile(compileId, CompileOutcome{"error", e.what(), pass, std::nullopt});
      }
      throw;
    }
  }
  double compileMs =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

  ExecutableOptions execOptions;
  execOptions.check = options.check;
  Executable executable(graph, plan, execOptions);
  auto runStart = std::chrono::steady_clock::now();
  std::vector<Tensor> outputs = executable.run(inputs);
  double runMs =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - runStart)
          .count();

  std::printf("compiled %s with %zu kernels in %.1f ms; ran in %.3f ms\n", options.file.c_str(),
              plan.kernels.size(), compileMs, runMs);
  for (size_t i = 0; i < outputs.size(); ++i)
    printTensorSummary("output " + std::to_string(i), outputs[i]);

  if (options.check) {
    std::printf("%-8s %-40s %6s %12s %12s\n", "kernel", "implementation", "calls", "max abs err",
                "max rel err");
    for (const auto& [name, s] : executable.stats().kernels)
      std::printf("%-8s %-40s %6lld %12.3g %12.3g\n", name.c_str(), s.implementation.c_str(),
                  static_cast<long long>(s.calls), s.maxAbsError, s.maxRelError);
  }
  if (!options.outputDir.empty()) {
    std::filesystem::create_directories(options.outputDir);
    for (size_t i = 0; i < outputs.size(); ++i) {
      std::string path = options.outputDir + "/output" + std::to_string(i) + ".npy";
      writeNpy(path, outputs[i]);
      std::cout << "wrote " << path << "\n";
    }
  }
  if (writer) {
    if (options.check && !options.noCompile)
      for (const auto& [name, s] : executable.stats().kernels)
        writer->recordKernelMaxError(compileId, name, s.maxAbsError);
    writer->recordRuntimeStats(compileId, RuntimeStatsRecord{1, runMs});
    if (recorder) recorder->recordMeasuredArena(executable.arenaBytes());
    writer->finishCompile(compileId, CompileOutcome{"ok", std::nullopt, std::nullopt, compileMs});
    std::cout << "trace: " << options.trace << " (compile " << compileId << ")\n";
  }
  return 0;
}

} // namespace loupe::cli
