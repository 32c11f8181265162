// Working memory of a library kernel (convolution's unfolded columns, attention's weight
// blocks), allocated as a tensor rather than a std::vector so that the executable's measure of
// a call's memory (compiler/tensor/allocation_meter.h) counts it. Uninitialised: kernels write
// every element before reading it.
#pragma once

#include <cstdint>

#include "compiler/tensor/tensor.h"

namespace loupe::library {

template <typename T>
class Scratch {
public:
  explicit Scratch(int64_t count)
      : storage_(Tensor::empty(DType::U8, {count * static_cast<int64_t>(sizeof(T))})) {}
  T* data() const { return storage_.dataAs<T>(); }

private:
  Tensor storage_;
};

} // namespace loupe::library
