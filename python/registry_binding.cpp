#include "python/registry_binding.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <string>
#include <vector>

#include "compiler/ops/op_registry.h"
#include "passes/pipeline.h"

namespace loupe::binding {
namespace {

std::vector<std::string> withoutDisabled(std::vector<std::string> names,
                                         const std::vector<std::string>& disabled) {
  for (const auto& name : disabled)
    checkPassName(name); // a misspelt pass name is an error, not a silent no-op
  std::erase_if(names, [&](const std::string& name) {
    return std::find(disabled.begin(), disabled.end(), name) != disabled.end();
  });
  return names;
}

} // namespace

void bindRegistry(nb::module_& m) {
  m.def("registered_ops", [] {
    std::vector<std::string> names;
    for (const OpInfo* info : OpRegistry::global().all())
      names.push_back(info->name);
    return names;
  });
  m.def("default_pipeline", &defaultPipeline);
  m.def("all_passes", [] {
    std::vector<std::string> names;
    for (const auto& entry : allPasses())
      names.emplace_back(entry.name);
    return names;
  });
  m.def(
      "resolve_pipeline",
      [](const std::string& text, const std::vector<std::string>& disabled) {
        return withoutDisabled(parsePipeline(text), disabled);
      },
      nb::arg("pipeline") = "default", nb::arg("disable") = std::vector<std::string>{},
      "Pass names of a pipeline ('default' or 'a,b,c') less the disabled ones; raises "
      "LoupeError naming the valid passes for an unknown name.");
}

} // namespace loupe::binding
