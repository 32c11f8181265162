#include "python/python_fallback.h"

#include <nanobind/stl/vector.h>

#include <vector>

#include "compiler/ir/error.h"
#include "python/dlpack_tensors.h"

namespace loupe::binding {

namespace {

class FallbackRequest {
public:
  FallbackRequest(std::vector<Tensor>* outputs, const SymbolBindings* bindings)
      : outputs_(outputs), bindings_(bindings) {}

  nb::object output(size_t r) const {
    check();
    if (r >= outputs_->size())
      throw Error("runtime", "fallback asked for output " + std::to_string(r) + " of " +
                                 std::to_string(outputs_->size()));
    return toTorch((*outputs_)[r]);
  }

  nb::dict symbols() const {
    check();
    nb::dict symbols;
    for (const auto& [name, value] : *bindings_)
      symbols[nb::str(name.c_str())] = value;
    return symbols;
  }

  void expire() { outputs_ = nullptr; }

private:
  void check() const {
    if (!outputs_) throw Error("runtime", "a fallback request is used after its call returned");
  }

  std::vector<Tensor>* outputs_;
  const SymbolBindings* bindings_;
};

} // namespace

FallbackFn toFallbackFn(PythonFallback fallback) {
  if (!fallback) return {};
  return [fallback](const Node& node, const std::vector<const Tensor*>& inputs,
                    std::vector<Tensor>& outputs, const SymbolBindings& bindings) {
    nb::gil_scoped_acquire gil;
    nb::list in;
    for (const Tensor* t : inputs)
      in.append(t ? toTorch(*t) : nb::none());
    nb::object handle =
        nb::cast(new FallbackRequest(&outputs, &bindings), nb::rv_policy::take_ownership);
    auto* request = nb::inst_ptr<FallbackRequest>(handle);
    nb::object results;
    try {
      results = fallback(node.numResults() ? node.result()->name() : "", node.op(), in, handle);
    } catch (...) {
      request->expire();
      throw;
    }
    request->expire();
    if (results.is_none()) return;
    nb::list list = nb::cast<nb::list>(results);
    for (size_t r = 0; r < outputs.size() && r < list.size(); ++r)
      if (!list[r].is_none()) outputs[r] = keepArray(list[r], r);
  };
}

void bindFallback(nb::module_& m) {
  nb::class_<FallbackRequest>(m, "FallbackRequest")
      .def("output", &FallbackRequest::output, nb::arg("index"))
      .def("symbols", &FallbackRequest::symbols);
}

} // namespace loupe::binding
