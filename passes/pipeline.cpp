// The pass table's lookups: names, factories and the default pipeline, all from passes.def.
#include "passes/pipeline.h"

#include <algorithm>

#include "compiler/ir/error.h"

namespace loupe {
namespace {

constexpr PassEntry kPasses[] = {
#define LOUPE_PASS(NAME, CLASS, SUMMARY) {NAME, SUMMARY, create##CLASS},
#include "passes/passes.def"
};

const PassEntry* findPass(std::string_view name) {
  auto it = std::find_if(std::begin(kPasses), std::end(kPasses),
                         [&](const PassEntry& entry) { return entry.name == name; });
  return it == std::end(kPasses) ? nullptr : &*it;
}

} // namespace

std::span<const PassEntry> allPasses() {
  return kPasses;
}

const PassEntry& passEntry(PassId id) {
  return kPasses[static_cast<size_t>(id)];
}

std::vector<std::string> defaultPipeline() {
  std::vector<std::string> names;
  for (const PassEntry& entry : kPasses)
    names.emplace_back(entry.name);
  return names;
}

bool isPassName(std::string_view name) {
  return findPass(name) != nullptr;
}

void checkPassName(std::string_view name) {
  if (isPassName(name)) return;
  std::string valid;
  for (const PassEntry& entry : kPasses)
    valid += (valid.empty() ? "" : ", ") + std::string(entry.name);
  throw Error("pipeline", "unknown pass '" + std::string(name) + "' (valid passes: " + valid + ")");
}

std::unique_ptr<Pass> createPass(std::string_view name) {
  checkPassName(name);
  return findPass(name)->create();
}

std::vector<std::string> parsePipeline(std::string_view text) {
  if (text == "default") return defaultPipeline();
  std::vector<std::string> names;
  while (true) {
    size_t comma = text.find(',');
    std::string name(text.substr(0, comma));
    checkPassName(name);
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
