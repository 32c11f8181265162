// Reading one compile's pipeline from its trace (loaded_compile.h).
#include "inspector/diff/loaded_compile.h"

#include <algorithm>

#include "compiler/ir/error.h"
#include "compiler/ir/parser.h"
#include "inspector/diff/compile_selector.h"

namespace loupe::diff {

LoadedCompile loadCompile(const CompileRef& ref) {
  if (!ref.trace)
    throw Error("diff", "no trace given for compile " + std::to_string(ref.compileId));
  LoadedCompile loaded{ref, ref.trace->compile(ref.compileId), {}};
  for (PassRow& row : ref.trace->passes(ref.compileId)) {
    LoadedPass pass{std::move(row), nullptr};
    if (pass.row.snapshot_id) {
      try {
        auto graphs = parseModule(ref.trace->snapshot(*pass.row.snapshot_id).lir);
        if (graphs.empty()) throw Error("parse", "the snapshot holds no graph");
        pass.graph = std::move(graphs.front());
      } catch (const Error& e) {
        throw Error("diff",
                    "the snapshot after pass '" + pass.row.info.name + "' of compile " +
                        std::to_string(ref.compileId) + " does not parse: " + e.message(),
                    ErrorContext{.file = ref.trace->path(), .pass = pass.row.info.name});
      }
    }
    loaded.passes.push_back(std::move(pass));
  }
  return loaded;
}

std::vector<std::string> inputNames(const LoadedCompile& compile, const Graph& graph) {
  std::vector<std::string> names;
  for (const CompileInput& input : compileInputs(*compile.ref.trace, compile.ref.compileId)) {
    if (input.name.empty()) return {};
    names.push_back(input.name);
  }
  size_t tensors = std::count_if(graph.inputs().begin(), graph.inputs().end(),
                                 [](const auto& v) { return v->type().isTensor(); });
  return names.size() == tensors ? names : std::vector<std::string>{};
}

} // namespace loupe::diff
