// The prelude every generated kernel source starts with (kernel_prelude.cpp): the ABI struct,
// fixed-width integer types, half conversions and the loupe_ math that the registry's scalar
// expressions call instead of <cmath> (docs/cpu-codegen.md, "Prelude").
#pragma once

#include <string_view>

namespace loupe::cpu_codegen {

// Guarded by LOUPE_KERNEL_PRELUDE, so a translation unit of several kernels holds it once.
std::string_view kernelPrelude();

} // namespace loupe::cpu_codegen
