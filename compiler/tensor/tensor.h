// A concrete tensor at run time: dtype, integer shape and strides (in elements), an offset,
// and storage that is either owned (allocated here, or by the embedder's allocator on a device)
// or borrowed (a torch tensor's memory, an arena slice). Reference implementations and kernels
// read and write through it. A tensor on a CUDA device (device.h) is the same description of
// device memory: views and data() work, reading or copying its elements on the host throws.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/dtype.h"
#include "compiler/ir/type.h"

namespace loupe {

class Tensor {
public:
  Tensor() = default;

  static Tensor empty(DType dtype, std::vector<int64_t> shape);
  static Tensor zeros(DType dtype, std::vector<int64_t> shape);
  // Borrowed memory: the caller keeps `data` alive for the tensor's lifetime, or hands an
  // `owner` that does (an embedder's tensor, released when the last copy of this one goes).
  static Tensor borrow(void* data, DType dtype, std::vector<int64_t> shape,
                       std::vector<int64_t> strides = {}, Device device = {},
                       std::shared_ptr<void> owner = nullptr);
  // Memory someone else allocated (a device allocator): `storage` points at element 0 and keeps
  // the memory alive; contiguous strides.
  static Tensor adopt(std::shared_ptr<void> storage, Device device, DType dtype,
                      std::vector<int64_t> shape);
  // A contiguous tensor in part of `block`'s memory, from `byteOffset` on: it shares the
  // block's storage (the memory lives while any tensor in it does) and is not an allocation of
  // its own. How one allocation holds several tensors.
  static Tensor within(const Tensor& block, size_t byteOffset, DType dtype,
                       std::vector<int64_t> shape);
  // Contiguous tensor holding `values` converted to `dtype` (the reference implementations
  // compute in double and store in the result's dtype).
  static Tensor fromDoubles(const std::vector<double>& values, DType dtype,
                            std::vector<int64_t> shape);

  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  const std::vector<int64_t>& strides() const { return strides_; }
  int64_t offset() const { return offset_; }
  size_t rank() const { return shape_.size(); }
  int64_t size(size_t dim) const { return shape_.at(dim); }
  int64_t numel() const;
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtypeSize(dtype_); }
  bool defined() const { return storage_ != nullptr; }
  bool isContiguous() const;

  // Pointer to element 0 (offset applied).
  void* data() const;
  template <typename T>
  T* dataAs() const {
    return static_cast<T*>(data());
  }

  // Element access by logical (row-major) linear index, converting to/from double.
  double at(int64_t linearIndex) const;
  void set(int64_t linearIndex, double value);
  void fill(double value); // every element, converted once (a contiguous tensor: copied bytes)
  std::vector<double> toDoubles() const; // logical row-major order

  // A view sharing storage (no copy): new shape/strides/offset in elements.
  Tensor view(std::vector<int64_t> shape, std::vector<int64_t> strides, int64_t offset) const;
  Tensor contiguous() const; // this if already contiguous, else a packed copy
  Tensor clone() const;      // always a packed copy
  Tensor to(DType dtype) const;
  void copyFrom(const Tensor& source); // same shape; any layouts and dtypes

  std::string describe() const; // "f32[2,3]", "f32[2,3] on cuda:0"

private:
  // Throws Error("runtime", ...) when the elements are not in host memory: `what` is the
  // accessor that needed them.
  void requireHost(const char* what) const;

  DType dtype_ = DType::F32;
  Device device_;
  std::vector<int64_t> shape_;
  std::vector<int64_t> strides_;
  int64_t offset_ = 0;
  std::shared_ptr<void> storage_;
};

std::vector<int64_t> contiguousStrides(const std::vector<int64_t>& shape);

// Half-precision conversions used by tensors and generated kernels.
float halfToFloat(uint16_t bits);
uint16_t floatToHalf(float value);
float bfloat16ToFloat(uint16_t bits);
uint16_t floatToBfloat16(float value);

} // namespace loupe
