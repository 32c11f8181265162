// The type of a value: a tensor (dtype, shape of symbolic dims, strides, device) or an index
// (a symbolic integer such as a SymInt input, whose value is a SymExpr).
#pragma once

#include <optional>
#include <string>

#include "compiler/ir/dtype.h"
#include "compiler/ir/sym_expr.h"

namespace loupe {

struct Device {
  enum class Kind : uint8_t { CPU, CUDA };
  Kind kind = Kind::CPU;
  int index = 0;

  std::string str() const; // "cpu", "cuda:0"
  bool isCpu() const { return kind == Kind::CPU; }
  friend bool operator==(const Device&, const Device&) = default;
};

struct TensorType {
  DType dtype = DType::F32;
  Shape shape;
  std::optional<Shape> strides; // nullopt: contiguous row-major
  Device device;

  size_t rank() const { return shape.size(); }
  Shape effectiveStrides() const { return strides ? *strides : contiguousStrides(shape); }
  // As in torch, the stride of a size-1 dim never matters: [1,8]<strides=[256,1]> is contiguous.
  bool isContiguous() const;
  TensorType withShape(Shape newShape) const; // contiguous, same dtype and device
  TensorType withDType(DType newDType) const;
  // Contiguous strides compare equal to no strides (and print alike); otherwise strides are
  // compared on the dims whose size is not 1.
  friend bool operator==(const TensorType& a, const TensorType& b) {
    return a.dtype == b.dtype && a.shape == b.shape && a.device == b.device &&
           a.isContiguous() == b.isContiguous() && (a.isContiguous() || sameStrides(a, b));
  }
  static bool sameStrides(const TensorType& a, const TensorType& b);
};

class Type {
public:
  Type(TensorType tensor) : tensor_(std::move(tensor)) {} // NOLINT: tensors are the common case
  static Type index(SymExpr value);

  bool isTensor() const { return !isIndex_; }
  bool isIndex() const { return isIndex_; }
  const TensorType& tensor() const; // throws Error when this is an index
  TensorType& tensor();
  const SymExpr& indexValue() const { return indexValue_; }

  // .lir spelling: "f32[s0,128]", "f32[4,8]<strides=[1,4]>", "f16[2]<cuda:0>", "index<s0>".
  std::string str() const;
  friend bool operator==(const Type&, const Type&) = default;

private:
  Type() = default;
  TensorType tensor_;
  bool isIndex_ = false;
  SymExpr indexValue_;
};

// Equality with every dim and stride compared by SymExpr::equalWhenDivisionsExact: how the
// verifier compares the types a frontend declared with the ones Loupe infers, since torch may
// spell a dim differently under its divisibility guards. A stride may also differ where one
// side has a floor division or a modulo: torch's fake tensors simplify those with the traced
// sizes (the padded attention mask of CUDA's memory-efficient attention, s + 8 - s%8 wide, has
// a batch stride of 2*s**2 in one node and s*(s + 8 - s%8) in the next), so they are exact only
// at the traced sizes; shape propagation replaces them with the inferred strides.
bool equalWhenDivisionsExact(const Type& a, const Type& b);

} // namespace loupe
