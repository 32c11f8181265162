// Ops Loupe cannot run call back into Python: the backend's fallback (the op run by torch) as
// the runtime's FallbackFn.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/string.h>

#include <functional>
#include <string>

#include "compiler/runtime/executable.h"

namespace loupe::binding {

namespace nb = nanobind;

// Calls the Python fallback with (the node's first result name, op, input tensors, a
// FallbackRequest). Input tensors are views of Loupe's memory, valid during the call. It returns,
// per output, a tensor (or its DLPack capsule) that is the result itself, which Loupe keeps alive
// and uses where it lies (or copies into its buffer when the layout differs), or None when it
// filled the output in place or the output is never read. It may also return None for all.
using PythonFallback =
    std::function<nb::object(const std::string&, const std::string&, nb::list, nb::object)>;

// The runtime's fallback for a Python one: the tensors are lent as views during the call.
// Empty for no fallback.
FallbackFn toFallbackFn(PythonFallback fallback);

// Registers FallbackRequest: what a fallback may ask of the run besides its inputs, made only
// when asked, since a torch tensor per planned output and a dict of the symbols cost more than
// a small op when most calls use their own results and read no symbol:
//   request.output(r)  the planned buffer of output r as a torch tensor, to fill in place;
//   request.symbols()  the run's symbol values by name (s0=8), for symbolic int arguments.
// Valid during the call only: afterwards both raise.
void bindFallback(nb::module_& m);

} // namespace loupe::binding
