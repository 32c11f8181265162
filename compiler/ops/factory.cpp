// Ops that create a tensor from attributes: full/zeros/ones/empty (sized by `size`), their
// *_like forms and fill.Scalar (shaped like a tensor operand whose values they ignore), their
// new_* forms (sized by `size`, dtype and device from a tensor operand), arange and
// scalar_tensor.
//
// The empty forms (empty.memory_format, empty_like, new_empty, new_empty_strided) are pure: their
// content is unspecified, so two of them may be merged or one dropped; graphs reaching Loupe are
// functional, so nothing writes into them afterwards. Their reference zero-fills so that runs
// are deterministic.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "compiler/ops/factory.h"

#include "compiler/ir/error.h"
#include "compiler/ops/device_attribute.h"
#include "compiler/ops/op_registry.h"
#include "compiler/ops/pointwise.h"
#include "compiler/ops/type_promotion.h"

namespace loupe {

namespace {

using TypeFn = TensorType (*)(std::string_view op, const std::vector<const Type*>& operands,
                              const AttrMap& attrs);
using ValueFn = double (*)(const AttrMap& attrs, int64_t index);

// Sized by the `size` attribute, dtype= or `fallback`.
TensorType sized(std::string_view op, const AttrMap& attrs, DType fallback) {
  TensorType t;
  t.shape = attrs.getDims("size");
  t.dtype = attrs.getOptionalDType("dtype").value_or(fallback);
  t.device = deviceAttribute(attrs, op);
  return t;
}

TensorType sizedFloat(std::string_view op, const std::vector<const Type*>&, const AttrMap& attrs) {
  return sized(op, attrs, DType::F32);
}

// full's dtype follows fill_value: bool, i64 or the default float dtype.
TensorType sizedByFillValue(std::string_view op, const std::vector<const Type*>&,
                            const AttrMap& attrs) {
  const Attribute* fill = attrs.find("fill_value");
  if (!fill) throw Error("attribute", std::string(op) + ": fill_value is missing");
  return sized(op, attrs, scalarDType(*fill));
}

TensorType likeOperand(std::string_view op, const std::vector<const Type*>& operands,
                       const AttrMap& attrs) {
  const TensorType& self = tensorOperand(operands, 0, op);
  TensorType t = self.withShape(self.shape);
  t.dtype = attrs.getOptionalDType("dtype").value_or(self.dtype);
  t.device = deviceAttribute(attrs, op, self.device);
  return t;
}

// new_ones and friends: `size` gives the shape, self the dtype and device unless given.
TensorType sizedLikeOperand(std::string_view op, const std::vector<const Type*>& operands,
                            const AttrMap& attrs) {
  const TensorType& self = tensorOperand(operands, 0, op);
  TensorType t = sized(op, attrs, self.dtype);
  t.device = deviceAttribute(attrs, op, self.device);
  return t;
}

TensorType scalarTensor(std::string_view op, const std::vector<const Type*>&,
                        const AttrMap& attrs) {
  TensorType t;
  t.dtype = attrs.getOptionalDType("dtype").value_or(DType::F32);
  t.device = deviceAttribute(attrs, op);
  return t;
}

// arange's length is ceil((end - start) / step): exact (and symbolic) when every argument is an
// integer and step a constant, computed in double when one is a float.
TensorType arangeType(std::string_view op, const std::vector<const Type*>&, const AttrMap& given) {
  static const std::vector<AttrSpec> defaults = {{"start", SymExpr(0)}, {"step", SymExpr(1)}};
  AttrMap attrs = withDefaults(given, defaults);
  bool integral = true;
  for (const char* name : {"start", "end", "step"}) {
    const Attribute* a = attrs.find(name);
    if (!a) throw Error("attribute", std::string(op) + ": " + name + " is missing");
    integral = integral && std::holds_alternative<SymExpr>(*a);
  }
  TensorType t;
  t.dtype = attrs.getOptionalDType("dtype").value_or(integral ? DType::I64 : DType::F32);
  t.device = deviceAttribute(attrs, op);
  SymExpr length;
  if (integral) {
    auto step = attrs.getDim("step").constant();
    if (!step || *step == 0)
      throw Error("shape", std::string(op) + ": step must be a nonzero constant, got " +
                               attrs.getDim("step").str());
    const SymExpr span = attrs.getDim("end") - attrs.getDim("start");
    length = SymExpr::floorDiv(span + (*step > 0 ? *step - 1 : *step + 1), *step);
  } else {
    const double step = attrs.getFloat("step");
    if (step == 0) throw Error("shape", std::string(op) + ": step must be nonzero");
    length =
        static_cast<int64_t>(std::ceil((attrs.getFloat("end") - attrs.getFloat("start")) / step));
  }
  if (auto n = length.constant(); n && *n < 0)
    throw Error("shape", std::string(op) + ": the range from start to end runs against step");
  t.shape = {length};
  return t;
}

double fillValue(const AttrMap& attrs, int64_t) {
  return attrs.getFloat("fill_value");
}
double zero(const AttrMap&, int64_t) {
  return 0;
}
double one(const AttrMap&, int64_t) {
  return 1;
}
double valueAttr(const AttrMap& attrs, int64_t) {
  return attrs.getFloat("value");
}
double scalarAttr(const AttrMap& attrs, int64_t) {
  return attrs.getFloat("s");
}
double rangeElement(const AttrMap& attrs, int64_t index) {
  return attrs.getFloat("start", 0) + static_cast<double>(index) * attrs.getFloat("step", 1);
}

struct FactoryOp {
  std::string name;
  std::vector<OperandSpec> operands;
  std::vector<AttrSpec> attrs;
  std::string summary;
  TypeFn type;
  ValueFn value;
};

std::vector<FactoryOp> factoryOps() {
  const std::vector<AttrSpec> tensorOptions = {{"dtype", NoneAttr{}},
                                               {"layout", NoneAttr{}},
                                               {"device", NoneAttr{}},
                                               {"pin_memory", NoneAttr{}}};
  auto with = [&](std::vector<AttrSpec> first, std::vector<AttrSpec> last = {}) {
    first.insert(first.end(), tensorOptions.begin(), tensorOptions.end());
    first.insert(first.end(), last.begin(), last.end());
    return first;
  };
  const AttrSpec size{"size", std::nullopt};
  const AttrSpec memoryFormat{"memory_format", NoneAttr{}};
  return {
      {"aten.full",
       {},
       with({size, {"fill_value", std::nullopt}}),
       "fill_value everywhere (dtype from fill_value unless given)",
       sizedByFillValue,
       fillValue},
      {"aten.zeros", {}, with({size}), "zeros (f32 unless dtype given)", sizedFloat, zero},
      {"aten.ones", {}, with({size}), "ones (f32 unless dtype given)", sizedFloat, one},
      {"aten.empty.memory_format",
       {},
       with({size}, {memoryFormat}),
       "unspecified content (the reference writes zeros)",
       sizedFloat,
       zero},
      {"aten.full_like",
       {{"self"}},
       with({{"fill_value", std::nullopt}}, {memoryFormat}),
       "fill_value everywhere, shaped like self",
       likeOperand,
       fillValue},
      {"aten.zeros_like",
       {{"self"}},
       with({}, {memoryFormat}),
       "zeros shaped like self",
       likeOperand,
       zero},
      {"aten.ones_like",
       {{"self"}},
       with({}, {memoryFormat}),
       "ones shaped like self",
       likeOperand,
       one},
      {"aten.new_full",
       {{"self"}},
       with({size, {"fill_value", std::nullopt}}),
       "fill_value everywhere, of size, with self's dtype and device unless given",
       sizedLikeOperand,
       fillValue},
      {"aten.new_zeros",
       {{"self"}},
       with({size}),
       "zeros of size, with self's dtype and device unless given",
       sizedLikeOperand,
       zero},
      {"aten.new_ones",
       {{"self"}},
       with({size}),
       "ones of size, with self's dtype and device unless given",
       sizedLikeOperand,
       one},
      {"aten.new_empty",
       {{"self"}},
       with({size}),
       "unspecified content of size (the reference writes zeros), self's dtype unless given",
       sizedLikeOperand,
       zero},
      {"aten.empty_like",
       {{"self"}},
       with({}, {memoryFormat}),
       "unspecified content shaped like self (the reference writes zeros)",
       likeOperand,
       zero},
      // Loupe lays the result out row-major whatever `stride` asks; the FX converter keeps
      // torch's layout where it differs (a permuted one is repacked, a gapped one refused).
      {"aten.new_empty_strided",
       {{"self"}},
       with({size, {"stride", std::nullopt}}),
       "unspecified content of size (the reference writes zeros), self's dtype unless given",
       sizedLikeOperand,
       zero},
      {"aten.fill.Scalar",
       {{"self"}},
       {{"value", std::nullopt}},
       "value everywhere, shaped like self",
       likeOperand,
       valueAttr},
      {"aten.scalar_tensor",
       {},
       with({{"s", std::nullopt}}),
       "a 0-d tensor holding s (f32 default)",
       scalarTensor,
       scalarAttr},
      {"aten.arange",
       {},
       with({{"end", std::nullopt}}),
       "0, 1, ..., end - 1",
       arangeType,
       rangeElement},
      {"aten.arange.start",
       {},
       with({{"start", std::nullopt}, {"end", std::nullopt}}),
       "start, start + 1, ... below end",
       arangeType,
       rangeElement},
      {"aten.arange.start_step",
       {},
       with({{"start", std::nullopt}, {"end", std::nullopt}, {"step", SymExpr(1)}}),
       "start, start + step, ... up to end (exclusive)",
       arangeType,
       rangeElement},
  };
}

} // namespace

bool fillsOneValue(std::string_view op) {
  static const std::vector<std::string> ops = [] {
    std::vector<std::string> names;
    for (const FactoryOp& factory : factoryOps())
      if (factory.value != rangeElement) names.push_back(factory.name);
    return names;
  }();
  return std::find(ops.begin(), ops.end(), op) != ops.end();
}

void registerFactoryOps(OpRegistry& registry) {
  for (FactoryOp& op : factoryOps()) {
    OpInfo info;
    info.name = op.name;
    info.kind = OpKind::Factory;
    info.operands = op.operands;
    info.attrs = op.attrs;
    info.summary = op.summary;
    info.infer = [name = op.name, type = op.type](const std::vector<const Type*>& operands,
                                                  const AttrMap& attrs) {
      return std::vector<Type>{type(name, operands, attrs)};
    };
    // Every op but arange writes one value everywhere (fillsOneValue): converted once, its
    // bytes copied.
    bool constant = op.value != rangeElement;
    info.reference = [value = op.value, constant](const std::vector<const Tensor*>&,
                                                  const AttrMap& attrs,
                                                  std::vector<Tensor>& outputs) {
      if (constant) return outputs[0].fill(value(attrs, 0));
      for (int64_t i = 0; i < outputs[0].numel(); ++i)
        outputs[0].set(i, value(attrs, i));
    };
    registry.add(std::move(info));
  }
}

Device deviceAttribute(const AttrMap& attrs, std::string_view op, Device fallback) {
  const Attribute* a = attrs.find("device");
  const auto* text = a ? std::get_if<std::string>(a) : nullptr;
  if (!text) return fallback;
  if (*text == "cpu") return {Device::Kind::CPU, 0};
  if (*text == "cuda") return {Device::Kind::CUDA, 0};
  if (text->starts_with("cuda:") && text->size() > 5 && text->size() < 9 &&
      text->find_first_not_of("0123456789", 5) == std::string::npos)
    return {Device::Kind::CUDA, std::stoi(text->substr(5))};
  throw Error("attribute", std::string(op) + ": unknown device \"" + *text + "\"");
}

} // namespace loupe
