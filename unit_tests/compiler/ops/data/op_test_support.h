// Shorthands for the op tests: looking ops up, building types and attributes, random tensors,
// and inferring or running an op on concrete tensors.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/error.h"
#include "compiler/ops/op_registry.h"

namespace loupe::testing {

inline const OpInfo& opInfo(std::string_view name) {
  const OpInfo* info = OpRegistry::global().find(name);
  if (!info) throw std::runtime_error("op not registered: " + std::string(name));
  return *info;
}

inline bool registered(std::string_view name) {
  return OpRegistry::global().find(name) != nullptr;
}

inline SymExpr sym(std::string_view name) {
  return SymExpr::symbol(name);
}

inline TensorType tensorType(Shape shape, DType dtype = DType::F32,
                             std::optional<Shape> strides = std::nullopt) {
  TensorType t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.strides = std::move(strides);
  return t;
}

inline AttrMap attrs(std::initializer_list<std::pair<std::string, Attribute>> values) {
  AttrMap map;
  for (const auto& [name, value] : values)
    map.set(name, value);
  return map;
}

inline std::vector<Type> infer(std::string_view op, const std::vector<TensorType>& operands,
                               const AttrMap& attributes = {}) {
  std::vector<Type> types(operands.begin(), operands.end());
  std::vector<const Type*> pointers;
  for (const Type& t : types)
    pointers.push_back(&t);
  return opInfo(op).infer(pointers, attributes);
}

inline Type inferOne(std::string_view op, const std::vector<TensorType>& operands,
                     const AttrMap& attributes = {}) {
  auto types = infer(op, operands, attributes);
  EXPECT_EQ(types.size(), 1u) << op;
  return types.at(0);
}

// The message of the loupe::Error that `body` throws, with its kind checked; "" if none.
template <typename F>
std::string errorMessage(F&& body, std::string_view kind = "shape") {
  try {
    body();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    return e.message();
  }
  ADD_FAILURE() << "expected an Error of kind " << kind;
  return "";
}

inline TensorType typeOf(const Tensor& t) {
  Shape shape(t.shape().begin(), t.shape().end());
  Shape strides(t.strides().begin(), t.strides().end());
  return tensorType(shape, t.dtype(), strides);
}

inline Tensor iota(std::vector<int64_t> shape, DType dtype = DType::F32) {
  Tensor t = Tensor::empty(dtype, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i)
    t.set(i, static_cast<double>(i));
  return t;
}

inline Tensor randomTensor(std::vector<int64_t> shape, std::mt19937& rng,
                           DType dtype = DType::F64) {
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  Tensor t = Tensor::empty(dtype, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i)
    t.set(i, uniform(rng));
  return t;
}

inline Tensor indexTensor(const std::vector<double>& values, std::vector<int64_t> shape) {
  return Tensor::fromDoubles(values, DType::I64, std::move(shape));
}

// Infers the result types from the tensors' own layouts and runs the reference.
inline std::vector<Tensor> run(std::string_view op, const std::vector<const Tensor*>& inputs,
                               const AttrMap& attributes = {}) {
  std::vector<TensorType> types;
  for (const Tensor* t : inputs)
    types.push_back(typeOf(*t));
  return runReference(opInfo(op), inputs, attributes, infer(op, types, attributes), {});
}

inline Tensor runOne(std::string_view op, const std::vector<const Tensor*>& inputs,
                     const AttrMap& attributes = {}) {
  return run(op, inputs, attributes).at(0);
}

inline double innerProduct(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  double sum = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    sum += a.at(i) * b.at(i);
  return sum;
}

} // namespace loupe::testing
