// Building blocks for pointwise ops: shape inference over broadcast operands, a reference loop
// that evaluates one scalar function per output element, and the C++ scalar expression
// templates that generated kernels splice together.
#pragma once

#include <cctype>
#include <cmath>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/attribute.h"
#include "compiler/ir/error.h"
#include "compiler/ops/broadcast.h"
#include "compiler/ops/op_registry.h"

namespace loupe {

// The operand at `index` as a tensor type; throws naming the op when it is absent or an index.
inline const TensorType& tensorOperand(const std::vector<const Type*>& operands, size_t index,
                                       std::string_view opName) {
  if (index >= operands.size() || !operands[index] || !operands[index]->isTensor())
    throw Error("shape",
                std::string(opName) + ": operand " + std::to_string(index) + " must be a tensor");
  return operands[index]->tensor();
}

inline std::vector<const TensorType*> tensorOperands(const std::vector<const Type*>& operands,
                                                     std::string_view opName) {
  std::vector<const TensorType*> out;
  for (size_t i = 0; i < operands.size(); ++i)
    out.push_back(operands[i] ? &tensorOperand(operands, i, opName) : nullptr);
  return out;
}

// Result dtype of a pointwise op from its (present) tensor operands and attributes.
using DTypeRule =
    std::function<DType(const std::vector<const TensorType*>& operands, const AttrMap& attrs)>;

// Inference for a pointwise op with one result: the broadcast of every present operand's
// shape, the dtype from `rule`, the device of the first operand that has dims (a 0-d CPU
// tensor may combine with CUDA tensors, as in torch).
inline InferFn pointwiseInfer(std::string opName, DTypeRule rule) {
  return [opName = std::move(opName),
          rule = std::move(rule)](const std::vector<const Type*>& operands, const AttrMap& attrs) {
    auto tensors = tensorOperands(operands, opName);
    std::vector<Shape> shapes;
    TensorType result;
    bool deviceChosen = false;
    for (const TensorType* t : tensors) {
      if (!t) continue;
      shapes.push_back(t->shape);
      if (!deviceChosen) result.device = t->device;
      deviceChosen = deviceChosen || t->rank() > 0;
    }
    result.shape = broadcastShapes(shapes, opName);
    result.dtype = rule(tensors, attrs);
    return std::vector<Type>{result};
  };
}

// One output element from the input elements at the same (broadcast) position, in double.
using PointwiseFn = std::function<double(const double* args, const AttrMap& attrs)>;

// A reference implementation applying `fn` elementwise; absent operands read as 0.
inline ReferenceFn pointwiseReference(PointwiseFn fn) {
  return [fn = std::move(fn)](const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
                              std::vector<Tensor>& outputs) {
    Tensor& out = outputs[0];
    std::vector<BroadcastIndexer> indexers;
    for (const Tensor* in : inputs)
      indexers.emplace_back(in ? in->shape() : std::vector<int64_t>{}, out.shape());
    std::vector<double> args(inputs.size(), 0.0);
    for (int64_t i = 0; i < out.numel(); ++i) {
      for (size_t k = 0; k < inputs.size(); ++k)
        if (inputs[k]) args[k] = inputs[k]->at(indexers[k](i));
      out.set(i, fn(args.data(), attrs));
    }
  };
}

// The C++ type generated code computes in for `compute`.
inline std::string_view computeTypeName(DType compute) {
  if (compute == DType::Bool) return "bool";
  if (isIntegral(compute)) return "int64_t";
  return compute == DType::F64 ? "double" : "float";
}

// A literal of `value` in the compute type. Non-finite values use the kernel prelude's
// INFINITY and NAN (defined as <math.h> defines them).
inline std::string scalarLiteral(double value, DType compute) {
  if (std::isnan(value)) return "NAN";
  if (std::isinf(value)) return value > 0 ? "INFINITY" : "-INFINITY";
  if (compute == DType::Bool) return value != 0 ? "true" : "false";
  return "static_cast<" + std::string(computeTypeName(compute)) + ">(" + formatFloat(value) + ")";
}

// `attrs` with every attribute the op declares but the node leaves out set to its default, so
// that formulas can read attributes unconditionally.
inline AttrMap withDefaults(const AttrMap& attrs, const std::vector<AttrSpec>& specs) {
  AttrMap out = attrs;
  for (const AttrSpec& spec : specs)
    if (spec.defaultValue && !out.has(spec.name)) out.set(spec.name, *spec.defaultValue);
  return out;
}

// Expands a scalar expression template: $0..$9 become the operand expressions (parenthesised),
// $T the compute type's name, and @name the literal of numeric attribute `name` in the compute
// type, so a template reads like the formula: "($0 + @alpha * $1)", "($T(1) / $0)".
inline std::string expandScalarTemplate(std::string_view pattern,
                                        const std::vector<std::string>& args, DType compute,
                                        const AttrMap& attrs = {}) {
  auto fail = [&](const std::string& what) -> std::string {
    throw Error("codegen", "scalar template '" + std::string(pattern) + "': " + what);
  };
  auto isNameChar = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    const char next = i + 1 < pattern.size() ? pattern[i + 1] : '\0';
    if (c == '$' && next == 'T') {
      out += computeTypeName(compute);
      ++i;
    } else if (c == '$' && next >= '0' && next <= '9') {
      const auto index = static_cast<size_t>(next - '0');
      out += index < args.size() ? "(" + args[index] + ")"
                                 : fail("$" + std::string(1, next) + " but only " +
                                        std::to_string(args.size()) + " operands");
      ++i;
    } else if (c == '@') {
      size_t end = i + 1;
      while (end < pattern.size() && isNameChar(pattern[end]))
        ++end;
      std::string name(pattern.substr(i + 1, end - i - 1));
      if (!attrs.has(name)) fail("attribute " + name + " is not set");
      out += scalarLiteral(attrs.getFloat(name), compute);
      i = end - 1;
    } else {
      out += c;
    }
  }
  return out;
}

} // namespace loupe
