#include "compiler/ops/op_registry.h"

#include "compiler/ir/error.h"

namespace loupe {

std::string_view opKindName(OpKind kind) {
  switch (kind) {
  case OpKind::Elementwise:
    return "elementwise";
  case OpKind::Reduction:
    return "reduction";
  case OpKind::View:
    return "view";
  case OpKind::DataMovement:
    return "data-movement";
  case OpKind::Matmul:
    return "matmul";
  case OpKind::Convolution:
    return "convolution";
  case OpKind::Normalization:
    return "normalization";
  case OpKind::Pooling:
    return "pooling";
  case OpKind::Factory:
    return "factory";
  case OpKind::Other:
    return "other";
  }
  return "?";
}

const OpRegistry& OpRegistry::global() {
  static const OpRegistry registry = [] {
    OpRegistry r;
    registerElementwiseOps(r);
    registerReductionOps(r);
    registerNormalizationOps(r);
    registerViewOps(r);
    registerDataMovementOps(r);
    registerMatmulOps(r);
    registerConvolutionOps(r);
    registerPoolingOps(r);
    registerAttentionOps(r);
    registerFactoryOps(r);
    registerLoupeOps(r);
    return r;
  }();
  return registry;
}

void OpRegistry::add(OpInfo info) {
  std::string name = info.name;
  if (!ops_.emplace(name, std::make_unique<OpInfo>(std::move(info))).second)
    throw Error("registry", "op " + name + " registered twice");
}

const OpInfo* OpRegistry::find(std::string_view name) const {
  auto it = ops_.find(name);
  return it == ops_.end() ? nullptr : it->second.get();
}

std::vector<const OpInfo*> OpRegistry::all() const {
  std::vector<const OpInfo*> out;
  for (const auto& [name, info] : ops_)
    out.push_back(info.get());
  return out;
}

std::vector<Type> inferTypes(const OpInfo& info, const std::vector<Value*>& operands,
                             const AttrMap& attrs) {
  std::vector<const Type*> types;
  for (Value* v : operands)
    types.push_back(v ? &v->type() : nullptr);
  return info.infer(types, attrs);
}

std::vector<Type> inferTypes(const OpInfo& info, const Node& node) {
  try {
    return inferTypes(info, node.operands(), node.attrs());
  } catch (const Error& e) {
    throw e.withContext(ErrorContext{.node = node.describe()});
  }
}

std::vector<int64_t> evaluateShape(const Shape& shape, const SymbolBindings& bindings) {
  std::vector<int64_t> out;
  out.reserve(shape.size());
  for (const auto& d : shape) {
    try {
      out.push_back(d.evaluate(bindings));
    } catch (const std::out_of_range& e) {
      throw Error("runtime", std::string(e.what()) + " in shape [" + shapeStr(shape) + "]");
    }
  }
  return out;
}

std::vector<Tensor> runReference(const OpInfo& info, const std::vector<const Tensor*>& inputs,
                                 const AttrMap& attrs, const std::vector<Type>& resultTypes,
                                 const SymbolBindings& bindings) {
  if (!info.reference) throw Error("runtime", info.name + " has no reference implementation");
  std::vector<Tensor> outputs;
  for (const Type& t : resultTypes)
    outputs.push_back(Tensor::empty(t.tensor().dtype, evaluateShape(t.tensor().shape, bindings)));
  info.reference(inputs, attrs.bound(bindings), outputs);
  return outputs;
}

} // namespace loupe
