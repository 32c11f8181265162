// Helpers for the nn op tests: running an op's inference and reference directly, random
// inputs, and central finite differences of a forward reference, the independent oracle the
// backward references are checked against.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <initializer_list>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ops/op_registry.h"

namespace loupe::testing {

using Doubles = std::vector<double>;

inline const OpInfo& op(std::string_view name) {
  const OpInfo* info = OpRegistry::global().find(name);
  if (!info) throw std::runtime_error("op " + std::string(name) + " is not registered");
  return *info;
}

inline AttrMap attrs(std::initializer_list<std::pair<std::string, Attribute>> values) {
  AttrMap map;
  for (const auto& [name, value] : values)
    map.set(name, value);
  return map;
}

inline IntList ints(std::initializer_list<int64_t> values) {
  return IntList(values.begin(), values.end());
}

inline SymExpr sym(std::string_view name) {
  return SymExpr::symbol(name);
}

inline Type tensorType(Shape shape, DType dtype = DType::F32) {
  TensorType t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  return t;
}

// Shape inference on types; nullptr entries are absent optional operands.
inline std::vector<Type> infer(std::string_view name, const std::vector<const Type*>& operands,
                               const AttrMap& attributes = {}) {
  return op(name).infer(operands, attributes);
}

inline Tensor tensor(std::vector<int64_t> shape, const Doubles& values, DType dtype = DType::F64) {
  return Tensor::fromDoubles(values, dtype, std::move(shape));
}

// Deterministic values in [-1, 1).
inline Tensor randomTensor(std::vector<int64_t> shape, unsigned seed, DType dtype = DType::F64) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  Doubles values(static_cast<size_t>(n));
  for (double& v : values)
    v = dist(rng);
  return tensor(std::move(shape), values, dtype);
}

// Infers result types from the inputs' concrete shapes and runs the reference.
inline std::vector<Tensor> run(std::string_view name, const std::vector<const Tensor*>& inputs,
                               const AttrMap& attributes = {}) {
  std::vector<Type> types;
  for (const Tensor* t : inputs)
    types.push_back(t ? tensorType(Shape(t->shape().begin(), t->shape().end()), t->dtype())
                      : tensorType({}));
  std::vector<const Type*> typePointers;
  for (size_t i = 0; i < inputs.size(); ++i)
    typePointers.push_back(inputs[i] ? &types[i] : nullptr);
  const OpInfo& info = op(name);
  return runReference(info, inputs, attributes, info.infer(typePointers, attributes), {});
}

// d/dx of sum(upstream * forward(x)) by central differences, in float64.
inline Doubles numericGradient(const std::function<Doubles(const Doubles&)>& forward, Doubles x,
                               const Doubles& upstream, double step = 1e-6) {
  Doubles gradient(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    double saved = x[i];
    x[i] = saved + step;
    Doubles plus = forward(x);
    x[i] = saved - step;
    Doubles minus = forward(x);
    x[i] = saved;
    double sum = 0;
    for (size_t j = 0; j < plus.size(); ++j)
      sum += upstream[j] * (plus[j] - minus[j]);
    gradient[i] = sum / (2 * step);
  }
  return gradient;
}

inline void expectAllNear(const Doubles& actual, const Doubles& expected, double tolerance,
                          const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t i = 0; i < actual.size(); ++i)
    EXPECT_NEAR(actual[i], expected[i], tolerance) << what << " at element " << i;
}

// Checks a backward reference output against finite differences of `forward` in the input
// that `forward` varies.
inline void expectGradientMatches(const Tensor& analytic,
                                  const std::function<Doubles(const Doubles&)>& forward,
                                  const Tensor& point, const Tensor& upstream,
                                  const std::string& what, double tolerance = 1e-6) {
  expectAllNear(analytic.toDoubles(),
                numericGradient(forward, point.toDoubles(), upstream.toDoubles()), tolerance, what);
}

} // namespace loupe::testing
