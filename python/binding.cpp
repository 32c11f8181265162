// `loupe._C`: the bridge between the Python adapter and the C++ compiler. It compiles .lir text
// with a pass pipeline (recording into a trace when asked) and runs the result on torch tensors
// without copying them: inputs are borrowed through DLPack, outputs are handed back as tensors
// that own Loupe's buffers. Ops the registry does not know call back into Python.
//
// This file is the module and nothing else; each part lives in a file of its own:
// registry_binding (ops and passes), trace_binding (Trace), bisect_binding (bisect),
// compiled_graph (CompiledGraph), with dlpack_tensors and python_fallback beneath them.
#include <nanobind/nanobind.h>

#include "compiler/ir/error.h"
#include "python/bisect_binding.h"
#include "python/compiled_graph.h"
#include "python/python_fallback.h"
#include "python/registry_binding.h"
#include "python/trace_binding.h"

namespace nb = nanobind;

NB_MODULE(_C, m) {
  using namespace loupe;
  using namespace loupe::binding;
  m.doc() = "Loupe's compiler and runtime, for the torch.compile backend";
  m.attr("__version__") = LOUPE_VERSION;
  // Traces stay open in a module-level cache until the interpreter exits, after nanobind's
  // leak check has run.
  nb::set_leak_warnings(false);

  // Loupe's errors keep their kind ("parse", "shape", "pipeline", ...) and context in Python.
  static nb::exception<Error> loupeError(m, "LoupeError");

  bindRegistry(m);
  bindTrace(m);    // before the classes whose methods take a Trace
  bindFallback(m); // before the callbacks that receive a FallbackRequest
  bindBisect(m);
  bindCompiledGraph(m);
}
