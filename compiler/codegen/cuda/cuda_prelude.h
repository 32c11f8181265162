// The prelude of every generated CUDA kernel source (cuda_prelude.cpp).
#pragma once

#include <string_view>

namespace loupe::cuda_codegen {

std::string_view cudaPrelude();

} // namespace loupe::cuda_codegen
