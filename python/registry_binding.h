// What Loupe knows, for the adapter: its ops (to tell which FX nodes need the fallback) and its
// passes (the default pipeline, every pass, a pipeline resolved from the backend's options).
#pragma once

#include <nanobind/nanobind.h>

namespace loupe::binding {

namespace nb = nanobind;

// Adds registered_ops, default_pipeline, all_passes and resolve_pipeline to the module.
void bindRegistry(nb::module_& m);

} // namespace loupe::binding
