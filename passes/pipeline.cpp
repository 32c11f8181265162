#include "passes/pipeline.h"

#include "compiler/ir/error.h"

namespace loupe {
namespace {

// The order is the default pipeline's: analyses and rewrites on aten ops first, then layout
// and fusion on the simplified graph, then the plan (kernels, memory) for the final graph.
// Decomposition builds its pieces with inferred types, so shape propagation is needed only
// once, before it. Each pass describes itself (Pass::description), next to its code.
constexpr PassEntry kPasses[] = {
    {"shape-propagation", createShapePropagationPass},
    {"decomposition", createDecompositionPass},
    {"constant-folding", createConstantFoldingPass},
    {"algebraic-simplification", createAlgebraicSimplificationPass},
    {"cse", createCsePass},
    {"dce", createDcePass},
    {"layout", createLayoutPass},
    {"pointwise-fusion", createPointwiseFusionPass},
    {"reduction-fusion", createReductionFusionPass},
    {"kernel-selection", createKernelSelectionPass},
    {"memory-planning", createMemoryPlanningPass},
};

const PassEntry* findPass(std::string_view name) {
  for (const PassEntry& entry : kPasses)
    if (entry.name == name) return &entry;
  return nullptr;
}

std::string validNames() {
  std::string names;
  for (const PassEntry& entry : kPasses)
    names += (names.empty() ? "" : ", ") + std::string(entry.name);
  return names;
}

} // namespace

std::span<const PassEntry> allPasses() {
  return kPasses;
}

std::vector<std::string> defaultPipeline() {
  std::vector<std::string> names;
  for (const PassEntry& entry : kPasses)
    names.emplace_back(entry.name);
  return names;
}

std::unique_ptr<Pass> createPass(std::string_view name) {
  const PassEntry* entry = findPass(name);
  if (!entry)
    throw Error("pipeline",
                "unknown pass '" + std::string(name) + "' (valid passes: " + validNames() + ")");
  return entry->create();
}

std::vector<std::string> parsePipeline(std::string_view text) {
  if (text == "default") return defaultPipeline();
  std::vector<std::string> names;
  while (true) {
    size_t comma = text.find(',');
    std::string name(text.substr(0, comma));
    if (!findPass(name))
      throw Error("pipeline", "unknown pass '" + name + "' (valid passes: " + validNames() + ")");
    names.push_back(std::move(name));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return names;
}

void addPasses(PassManager& manager, const std::vector<std::string>& names) {
  for (const std::string& name : names)
    manager.add(createPass(name));
}

} // namespace loupe
