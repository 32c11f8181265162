#include "python/bisect_binding.h"

#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "driver/compile_graph.h"
#include "inspector/bisect/bisection_json.h"
#include "inspector/bisect/bisection_record.h"
#include "inspector/bisect/bisector.h"
#include "python/dlpack_tensors.h"
#include "python/python_fallback.h"
#include "python/trace_binding.h"

namespace loupe::binding {
namespace {

// Calls Python with (one line describing the trial, trials done, trials expected).
using PythonProgress = std::function<void(const std::string&, int, int)>;

// Bisects one graph against reference outputs (eager's); records the bisection against the
// compile when a trace is given. Returns the result as a dict (docs/bisect.md).
nb::dict bisectGraph(const std::string& lir, const std::vector<std::string>& pipeline,
                     const std::vector<AnyArray>& inputArrays,
                     const std::vector<AnyArray>& referenceArrays, PythonFallback fallback,
                     int injectFault, std::optional<double> rtol, std::optional<double> atol,
                     Trace* trace, int64_t compileId, PythonProgress progress) {
  // Imported as the backend's compile imported it (the pipeline is the bisector's to run).
  CompileResult imported = compileGraph(lir, "<fx graph>", CompileOptions{});
  imported.throwIfFailed();
  const Graph& graph = *imported.graph;
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
      progress(describeTrial(trial), done, estimated);
    };
  BisectResult result = bisect(graph, inputs, reference, options);
  if (trace) trace->writer().recordBisection(compileId, bisectionRecordOf(result, injectFault));
  // The JSON `loupe bisect --json` prints, as a dict: one serialisation of a bisection.
  static nb::handle loads =
      nb::object(nb::module_::import_("json").attr("loads")).release(); // outlives the module
  return nb::cast<nb::dict>(loads(bisectionJson(result, injectFault).dump()));
}

} // namespace

void bindBisect(nb::module_& m) {
  m.def("bisect", &bisectGraph, nb::arg("lir"), nb::arg("pipeline"), nb::arg("inputs"),
        nb::arg("reference"), nb::arg("fallback").none() = nb::none(), nb::arg("inject_fault") = -1,
        nb::arg("rtol").none() = nb::none(), nb::arg("atol").none() = nb::none(),
        nb::arg("trace").none() = nb::none(), nb::arg("compile_id") = 0,
        nb::arg("progress").none() = nb::none(),
        "Finds the pass and the decision that make the compiled graph's outputs differ from "
        "`reference` (eager's) on `inputs`; records the bisection against compile_id when a "
        "trace is given. Returns a dict, as `loupe bisect --json` prints it: status, diverged, "
        "report, decision, culprit_nodes, steps, ...");
}

} // namespace loupe::binding
