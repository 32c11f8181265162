// Helpers for op-registry tests: types, random tensors, running one op's inference and
// reference, and comparing against expected values computed independently in the test.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "compiler/ops/op_registry.h"

namespace loupe::testing {

inline Type tensorType(DType dtype, Shape shape) {
  TensorType t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  return t;
}

inline const OpInfo& op(std::string_view name) {
  const OpInfo* info = OpRegistry::global().find(name);
  if (!info) throw std::runtime_error("op not registered: " + std::string(name));
  return *info;
}

inline std::vector<Type> infer(std::string_view name, const std::vector<Type>& operands,
                               const AttrMap& attrs = {}) {
  std::vector<const Type*> pointers;
  for (const Type& t : operands)
    pointers.push_back(&t);
  return op(name).infer(pointers, attrs);
}

inline Type inferOne(std::string_view name, const std::vector<Type>& operands,
                     const AttrMap& attrs = {}) {
  return infer(name, operands, attrs).at(0);
}

inline Shape shapeOf(const Tensor& t) {
  Shape s;
  for (int64_t d : t.shape())
    s.push_back(d);
  return s;
}

// Infers result types from the concrete inputs, then runs the reference.
inline std::vector<Tensor> run(std::string_view name, const std::vector<Tensor>& inputs,
                               const AttrMap& attrs = {}) {
  std::vector<Type> types;
  std::vector<const Tensor*> pointers;
  for (const Tensor& t : inputs) {
    types.push_back(tensorType(t.dtype(), shapeOf(t)));
    pointers.push_back(&t);
  }
  return runReference(op(name), pointers, attrs, infer(name, types, attrs), {});
}

inline Tensor runOne(std::string_view name, const std::vector<Tensor>& inputs,
                     const AttrMap& attrs = {}) {
  return run(name, inputs, attrs).at(0);
}

inline Tensor randomTensor(std::vector<int64_t> shape, double low = -2, double high = 2,
                           DType dtype = DType::F64, unsigned seed = 7) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(low, high);
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  std::vector<double> values(static_cast<size_t>(n));
  for (double& v : values)
    v = dtype == DType::F64 ? dist(gen) : std::round(dist(gen));
  return Tensor::fromDoubles(values, dtype, std::move(shape));
}

inline Tensor values(std::vector<double> v, DType dtype = DType::F64,
                     std::vector<int64_t> shape = {}) {
  if (shape.empty() && v.size() != 1) shape = {static_cast<int64_t>(v.size())};
  return Tensor::fromDoubles(v, dtype, std::move(shape));
}

inline AttrMap attrs(std::initializer_list<std::pair<std::string, Attribute>> entries) {
  AttrMap a;
  for (const auto& [name, value] : entries)
    a.set(name, value);
  return a;
}

// Element-by-element comparison that treats NaN as equal to NaN.
inline void expectValues(const Tensor& actual, const std::vector<double>& expected,
                         double tolerance = 1e-12) {
  ASSERT_EQ(actual.numel(), static_cast<int64_t>(expected.size())) << actual.describe();
  for (size_t i = 0; i < expected.size(); ++i) {
    const double a = actual.at(static_cast<int64_t>(i));
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(a)) << "element " << i;
    } else {
      EXPECT_NEAR(a, expected[i], tolerance * std::max(1.0, std::fabs(expected[i])))
          << "element " << i << " of " << actual.describe();
    }
  }
}

inline void expectSameValues(const Tensor& actual, const Tensor& expected, double tolerance) {
  ASSERT_EQ(actual.shape(), expected.shape());
  expectValues(actual, expected.toDoubles(), tolerance);
}

inline std::vector<double> map(const Tensor& t, const std::function<double(double)>& f) {
  std::vector<double> out;
  for (double v : t.toDoubles())
    out.push_back(f(v));
  return out;
}

} // namespace loupe::testing
