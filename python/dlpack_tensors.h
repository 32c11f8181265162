// Tensors across the torch boundary without copies, through DLPack: a torch tensor's memory
// borrowed as a Loupe tensor (the inputs of a run, eager's reference outputs), and a Loupe tensor
// handed to torch as a tensor that owns (or, for a fallback's arguments, lends) its memory.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstddef>
#include <memory>

#include "compiler/tensor/tensor.h"

namespace loupe::binding {

namespace nb = nanobind;

// A CPU tensor as Python passes it (a torch tensor or its DLPack capsule).
using AnyArray = nb::ndarray<>; // on the host or a CUDA device

// Owns `object` (a Python object, or one that holds Python references) for C++ code that may
// drop it on any thread: it is deleted with the GIL held, or left to the interpreter's own
// teardown when the last owner goes after it (at exit).
template <typename T>
std::shared_ptr<T> heldWithGil(T* object) {
  return std::shared_ptr<T>(object, [](T* held) {
    if (!Py_IsInitialized()) return;
    nb::gil_scoped_acquire gil;
    delete held;
  });
}

// A Loupe tensor over a torch tensor's memory; the caller keeps the torch tensor alive.
// `position` names the input in the error for a dtype Loupe does not support.
Tensor borrowArray(const AnyArray& array, size_t position);

// The same over a torch tensor (or its DLPack capsule) that the Loupe tensor keeps alive: a
// fallback's result, used where torch put it.
Tensor keepArray(nb::handle object, size_t position);

// A torch tensor over a Loupe tensor's memory; it keeps a copy of the Loupe tensor, and so its
// storage when the tensor owns it. For borrowed memory (the fallback's arguments, valid during
// the callback) the caller guarantees the memory outlives every use of the result.
// The capsule goes straight to torch._C._from_dlpack: torch.utils.dlpack.from_dlpack's Python
// checks and nanobind's export through __dlpack__ cost more than a small kernel, per output.
nb::object toTorch(const Tensor& tensor);

} // namespace loupe::binding
