// torch's result_type for mixed operands. Operands fall in three priority groups: tensors with
// dims, 0-d tensors, and Python scalars (attributes). A lower group only changes the result
// when it is of a higher category (bool < integer < floating): f16[4] + f32[] stays f16,
// i32[4] + 2.5 is f32 (the default dtype), i64[4] + f64[] is f64.
#pragma once

#include <optional>
#include <variant>
#include <vector>

#include "compiler/ir/attribute.h"
#include "compiler/ir/dtype.h"
#include "compiler/ir/type.h"

namespace loupe {

// The dtype a Python scalar stands for: bool, i64 for ints, f32 (torch's default) for floats.
inline DType scalarDType(const Attribute& value) {
  if (std::holds_alternative<bool>(value)) return DType::Bool;
  if (std::holds_alternative<SymExpr>(value)) return DType::I64;
  return DType::F32;
}

namespace detail {
inline std::optional<DType> promoteOptional(std::optional<DType> a, std::optional<DType> b) {
  if (!a) return b;
  if (!b) return a;
  return promoteTypes(*a, *b);
}

// at::native's combine_categories: `lower` matters only when it is of a higher category.
inline std::optional<DType> combineCategories(std::optional<DType> higher,
                                              std::optional<DType> lower) {
  if (!higher) return lower;
  if (!lower || isFloating(*higher)) return higher;
  if (*higher == DType::Bool || isFloating(*lower)) return promoteTypes(*higher, *lower);
  return higher;
}
} // namespace detail

// The promoted dtype of tensor operands (null entries, absent optionals, are skipped) and
// scalar attributes (given by scalarDType).
inline DType resultType(const std::vector<const TensorType*>& tensors,
                        const std::vector<DType>& scalars = {}) {
  std::optional<DType> dimmed, zeroDim, wrapped;
  for (const TensorType* t : tensors) {
    if (!t) continue;
    auto& group = t->rank() == 0 ? zeroDim : dimmed;
    group = detail::promoteOptional(group, t->dtype);
  }
  for (DType s : scalars)
    wrapped = detail::promoteOptional(wrapped, s);
  auto result = detail::combineCategories(dimmed, detail::combineCategories(zeroDim, wrapped));
  return result.value_or(DType::F32);
}

// Ops that compute in floating point (true division, exp, sigmoid, ...) turn bool and integer
// inputs into the default dtype.
inline DType toFloatingResult(DType dtype) {
  return isFloating(dtype) ? dtype : DType::F32;
}

} // namespace loupe
