// Loupe's own ops: loupe.constant (a literal tensor, what constant folding produces) and
// loupe.fused (a fused group whose body graph is executed as one kernel).
#include "compiler/ir/error.h"
#include "compiler/ops/device_attribute.h"
#include "compiler/ops/op_registry.h"

namespace loupe {

void registerLoupeOps(OpRegistry& registry) {
  OpInfo constant;
  constant.name = "loupe.constant";
  constant.kind = OpKind::Factory;
  constant.summary = "a literal tensor: data holds every element, or one value repeated";
  constant.attrs = {{"dtype", {}}, {"shape", {}}, {"data", {}}, {"device", NoneAttr{}}};
  constant.infer = [](const std::vector<const Type*>&, const AttrMap& attrs) {
    TensorType t;
    t.dtype = attrs.getDType("dtype");
    t.device = deviceAttribute(attrs, "loupe.constant");
    t.shape = attrs.getDims("shape");
    auto data = attrs.getFloats("data");
    auto count = numel(t.shape).constant();
    if (data.size() != 1 && (!count || static_cast<int64_t>(data.size()) != *count))
      throw Error("shape", "loupe.constant has " + std::to_string(data.size()) +
                               " values for shape [" + shapeStr(t.shape) + "]");
    return std::vector<Type>{t};
  };
  constant.reference = [](const std::vector<const Tensor*>&, const AttrMap& attrs,
                          std::vector<Tensor>& outputs) {
    auto data = attrs.getFloats("data");
    Tensor& out = outputs[0];
    for (int64_t i = 0; i < out.numel(); ++i)
      out.set(i, data.size() == 1 ? data[0] : data[static_cast<size_t>(i)]);
  };
  registry.add(std::move(constant));

  OpInfo fused;
  fused.name = "loupe.fused";
  fused.kind = OpKind::Other;
  fused.numResults = -1;
  fused.summary = "a fused group: its body graph runs as one kernel";
  fused.operands = {{"inputs", false, true}};
  registry.add(std::move(fused));
}

} // namespace loupe
