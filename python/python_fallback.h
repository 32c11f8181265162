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

// Calls the Python fallback with (the node's first result name, op, input tensors, output
// tensors, the run's symbol values by name). Tensors handed over are views of Loupe's memory,
// valid during the call. It returns, per output, None when it filled that output in place, or
// a tensor (or its DLPack capsule) that is the result itself: Loupe keeps it alive and uses it
// where it lies. It may also return None for all of them.
using PythonFallback =
    std::function<nb::object(const std::string&, const std::string&, nb::list, nb::list, nb::dict)>;

// The runtime's fallback for a Python one: the tensors are lent as views during the call.
// Empty for no fallback.
FallbackFn toFallbackFn(PythonFallback fallback);

} // namespace loupe::binding
