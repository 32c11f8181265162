// Element types of tensors, named as in the .lir text format (f32, i64, bool, ...).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace loupe {

enum class DType : uint8_t { Bool, U8, I8, I16, I32, I64, F16, BF16, F32, F64 };

// The .lir spelling: "bool", "u8", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64".
std::string_view dtypeName(DType dtype);
std::optional<DType> parseDType(std::string_view text);

size_t dtypeSize(DType dtype);
bool isFloating(DType dtype);
bool isIntegral(DType dtype); // integers, not bool
// f16 and bf16, the floating types torch computes with in f32.
bool isReducedFloat(DType dtype);
// The dtype torch computes and accumulates `dtype` in: f32 for f16 and bf16, else `dtype`.
DType accumulationDType(DType dtype);

// torch's type promotion for two tensor operands of the same category rank
// (bool < integers < floating): the wider of the two within the higher category.
DType promoteTypes(DType a, DType b);

} // namespace loupe
