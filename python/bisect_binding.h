// `loupe._C.bisect`: the bisector (docs/bisect.md) on one FX graph's .lir, against eager's outputs.
#pragma once

#include <nanobind/nanobind.h>

namespace loupe::binding {

namespace nb = nanobind;

// Adds bisect to the module.
void bindBisect(nb::module_& m);

} // namespace loupe::binding
