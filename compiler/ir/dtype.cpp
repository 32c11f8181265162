#include "compiler/ir/dtype.h"

#include <array>

namespace loupe {

namespace {
struct DTypeInfo {
  DType dtype;
  std::string_view name;
  size_t size;
};
constexpr std::array<DTypeInfo, 10> kDTypes = {{
    {DType::Bool, "bool", 1},
    {DType::U8, "u8", 1},
    {DType::I8, "i8", 1},
    {DType::I16, "i16", 2},
    {DType::I32, "i32", 4},
    {DType::I64, "i64", 8},
    {DType::F16, "f16", 2},
    {DType::BF16, "bf16", 2},
    {DType::F32, "f32", 4},
    {DType::F64, "f64", 8},
}};
} // namespace

std::string_view dtypeName(DType dtype) {
  return kDTypes[static_cast<size_t>(dtype)].name;
}

std::optional<DType> parseDType(std::string_view text) {
  for (const auto& info : kDTypes)
    if (info.name == text) return info.dtype;
  return std::nullopt;
}

size_t dtypeSize(DType dtype) {
  return kDTypes[static_cast<size_t>(dtype)].size;
}

bool isFloating(DType dtype) {
  return dtype == DType::F16 || dtype == DType::BF16 || dtype == DType::F32 || dtype == DType::F64;
}

bool isIntegral(DType dtype) {
  return !isFloating(dtype) && dtype != DType::Bool;
}

bool isReducedFloat(DType dtype) {
  return dtype == DType::F16 || dtype == DType::BF16;
}

DType accumulationDType(DType dtype) {
  return isReducedFloat(dtype) ? DType::F32 : dtype;
}

DType promoteTypes(DType a, DType b) {
  if (a == b) return a;
  auto category = [](DType t) { return isFloating(t) ? 2 : isIntegral(t) ? 1 : 0; };
  if (category(a) != category(b)) return category(a) > category(b) ? a : b;
  // Same category: f16 and bf16 promote to f32 together, otherwise the wider wins.
  if ((a == DType::F16 && b == DType::BF16) || (a == DType::BF16 && b == DType::F16))
    return DType::F32;
  if ((a == DType::U8 && b == DType::I8) || (a == DType::I8 && b == DType::U8)) return DType::I16;
  return dtypeSize(a) >= dtypeSize(b) ? a : b;
}

} // namespace loupe
