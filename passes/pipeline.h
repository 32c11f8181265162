// The pass pipeline, built from the one pass table (passes/passes.def): every pass Loupe has,
// by name, with its factory and one-line summary, in the order the default pipeline runs them.
// Drivers (loupe-opt, the `loupe` command, the Python binding) build pipelines and check pass
// names through this header only, so adding a pass means one row in passes.def and its file.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/pass/pass.h"
#include "compiler/pass/pass_manager.h"

namespace loupe {

// One factory per pass: createCsePass(), createMemoryPlanningPass(), ...
#define LOUPE_PASS(NAME, CLASS, SUMMARY) std::unique_ptr<Pass> create##CLASS();
#include "passes/passes.def"

// One enumerator per row of the table, so a pass class can name its own row (TablePass).
enum class PassId {
#define LOUPE_PASS(NAME, CLASS, SUMMARY) CLASS,
#include "passes/passes.def"
};

struct PassEntry {
  std::string_view name;    // "cse", the flag and pipeline name
  std::string_view summary; // one line, for --help and --list-passes
  std::unique_ptr<Pass> (*create)();
};

// Every registered pass, in default-pipeline order.
std::span<const PassEntry> allPasses();
const PassEntry& passEntry(PassId id);

// The base of every pass in passes/: its name and description are its row of the table, so
// they are written once. `class CsePass : public TablePass<PassId::CsePass>`.
template <PassId Id>
class TablePass : public Pass {
public:
  std::string_view name() const final { return passEntry(Id).name; }
  std::string_view description() const final { return passEntry(Id).summary; }
};

// The pass names of the default pipeline, in order (a name may appear more than once).
std::vector<std::string> defaultPipeline();

// Whether `name` names a pass; checkPassName throws Error("pipeline", ...) listing the valid
// names when it does not. Neither constructs a pass.
bool isPassName(std::string_view name);
void checkPassName(std::string_view name);

// Creates the pass called `name`; throws like checkPassName when there is none.
std::unique_ptr<Pass> createPass(std::string_view name);

// Parses "a,b,c" or "default" into pass names, checking each; throws like checkPassName.
std::vector<std::string> parsePipeline(std::string_view text);

// Adds the named passes, in order, to `manager`.
void addPasses(PassManager& manager, const std::vector<std::string>& names);

} // namespace loupe
