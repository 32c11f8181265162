// What the factory ops (factory.cpp) fill their result with, for kernels that write it without
// the op's reference: a library fill on the CPU, a memset on CUDA.
#pragma once

#include <string_view>

namespace loupe {

// Whether `op` is a factory op of factory.cpp whose every element is one value, known from its
// attributes (full, zeros, ones, the empty forms, their _like and new_ forms, fill.Scalar,
// scalar_tensor): every one but arange. Not loupe.constant, whose elements are its data.
bool fillsOneValue(std::string_view op);

} // namespace loupe
