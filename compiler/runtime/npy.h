// NumPy .npy files, how `loupe run` takes inputs and writes outputs: format versions 1.0 and
// 2.0, little-endian, C order, dtypes f2 f4 f8 i1 i2 i4 i8 u1 b1. Every problem with a file
// (truncated, bad magic, unsupported dtype, Fortran order, a size that does not match the
// shape) is an Error("npy", ...) naming the path; a malformed file never crashes the reader.
#pragma once

#include <string>

#include "compiler/tensor/tensor.h"

namespace loupe {

Tensor readNpy(const std::string& path);
// Writes version 1.0 (2.0 when the header does not fit); the tensor may be strided.
void writeNpy(const std::string& path, const Tensor& tensor);

} // namespace loupe
