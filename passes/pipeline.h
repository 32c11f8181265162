// The pass pipeline in one place: every pass Loupe has, by name, with its factory, in the
// order the default pipeline runs them. Drivers (loupe-opt,
// the Python binding) build pipelines from names through this list only, so adding a pass
// means one factory declaration here and one entry in pipeline.cpp.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/pass/pass.h"
#include "compiler/pass/pass_manager.h"

namespace loupe {

// Front half: analyses and graph rewrites.
std::unique_ptr<Pass> createShapePropagationPass();
std::unique_ptr<Pass> createDecompositionPass();
std::unique_ptr<Pass> createConstantFoldingPass();
std::unique_ptr<Pass> createAlgebraicSimplificationPass();
std::unique_ptr<Pass> createCsePass();
std::unique_ptr<Pass> createDcePass();

// Back half: layout, fusion, kernel choice and memory planning (they fill the Plan).
std::unique_ptr<Pass> createLayoutPass();
std::unique_ptr<Pass> createPointwiseFusionPass();
std::unique_ptr<Pass> createReductionFusionPass();
std::unique_ptr<Pass> createKernelSelectionPass();
std::unique_ptr<Pass> createMemoryPlanningPass();

struct PassEntry {
  std::string_view name;
  std::unique_ptr<Pass> (*create)();
};

// Every registered pass, in default-pipeline order. The one-line description of a pass is
// its own Pass::description().
std::span<const PassEntry> allPasses();

// The pass names of the default pipeline, in order (a name may appear more than once).
std::vector<std::string> defaultPipeline();

// Creates the pass called `name`; throws Error("pipeline", ...) listing the valid names
// when there is none.
std::unique_ptr<Pass> createPass(std::string_view name);

// Parses "a,b,c" or "default" into pass names, checking each; throws like createPass.
std::vector<std::string> parsePipeline(std::string_view text);

// Adds the named passes, in order, to `manager`.
void addPasses(PassManager& manager, const std::vector<std::string>& names);

} // namespace loupe
