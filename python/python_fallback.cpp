#include "python/python_fallback.h"

#include <vector>

#include "python/dlpack_tensors.h"

namespace loupe::binding {

FallbackFn toFallbackFn(PythonFallback fallback) {
  if (!fallback) return {};
  return [fallback](const Node& node, const std::vector<const Tensor*>& inputs,
                    std::vector<Tensor>& outputs, const SymbolBindings& bindings) {
    nb::gil_scoped_acquire gil;
    nb::list in, out;
    for (const Tensor* t : inputs)
      in.append(t ? toTorch(*t) : nb::none());
    for (const Tensor& t : outputs)
      out.append(toTorch(t));
    nb::dict symbols;
    for (const auto& [name, value] : bindings)
      symbols[nb::str(name.c_str())] = value;
    nb::object results =
        fallback(node.numResults() ? node.result()->name() : "", node.op(), in, out, symbols);
    if (results.is_none()) return;
    nb::list list = nb::cast<nb::list>(results);
    for (size_t r = 0; r < outputs.size() && r < list.size(); ++r)
      if (!list[r].is_none()) outputs[r] = keepArray(list[r], r);
  };
}

} // namespace loupe::binding
