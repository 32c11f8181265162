#include "inspector/diff/compile_selector.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "compiler/ir/error.h"
#include "compiler/ir/parser.h"

namespace loupe::diff {

namespace {

using Predicate = std::function<bool(const CompileRow&)>;

std::string trim(std::string_view text) {
  size_t begin = text.find_first_not_of(" \t");
  if (begin == std::string_view::npos) return {};
  size_t end = text.find_last_not_of(" \t");
  return std::string(text.substr(begin, end - begin + 1));
}

bool isNumber(std::string_view text) {
  return !text.empty() && text.size() < 19 &&
         std::all_of(text.begin(), text.end(), [](char c) { return std::isdigit(c); });
}

// The graph kinds a selector may name, with their spellings.
std::optional<std::string> graphKind(std::string_view word) {
  static const std::map<std::string, std::string, std::less<>> kinds = {
      {"fw", "forward"},        {"forward", "forward"},     {"bw", "backward"},
      {"backward", "backward"}, {"inference", "inference"}, {"graph", "graph"}};
  auto it = kinds.find(word);
  if (it == kinds.end()) return std::nullopt;
  return it->second;
}

// "0/1" or "0/1:bw".
std::optional<Predicate> compileKeyPredicate(std::string_view part) {
  size_t colon = part.find(':');
  std::string_view key = part.substr(0, colon);
  size_t slash = key.find('/');
  if (slash == std::string_view::npos || !isNumber(key.substr(0, slash)) ||
      !isNumber(key.substr(slash + 1)))
    return std::nullopt;
  std::optional<std::string> kind;
  if (colon != std::string_view::npos) {
    kind = graphKind(part.substr(colon + 1));
    if (!kind) return std::nullopt;
  }
  return [key = std::string(key), kind](const CompileRow& c) {
    return c.info.compile_key == key && (!kind || c.info.graph_kind == *kind);
  };
}

Predicate inputDimPredicate(const TraceReader& trace, const std::string& lhs,
                            const std::string& value, std::string_view part) {
  std::string name = lhs;
  size_t dim = 0;
  if (size_t dot = lhs.rfind('.'); dot != std::string::npos && isNumber(lhs.substr(dot + 1))) {
    name = lhs.substr(0, dot);
    dim = std::stoul(lhs.substr(dot + 1));
  }
  if (name.empty())
    throw Error("usage", "selector part '" + std::string(part) + "' names no input");
  bool batch = lhs == "batch";
  return [&trace, name, dim, value, batch](const CompileRow& c) {
    for (const CompileInput& input : compileInputs(trace, c.id)) {
      if (batch || input.name == name) return dim < input.dims.size() && input.dims[dim] == value;
    }
    return false;
  };
}

Predicate parsePart(const TraceReader& trace, std::string_view part) {
  if (isNumber(part))
    return [id = std::stoll(std::string(part))](const CompileRow& c) { return c.id == id; };
  if (auto key = compileKeyPredicate(part)) return *key;
  if (auto kind = graphKind(part))
    return [kind = *kind](const CompileRow& c) { return c.info.graph_kind == kind; };
  size_t eq = part.find('=');
  if (eq != std::string_view::npos) {
    std::string lhs = trim(part.substr(0, eq));
    std::string rhs = trim(part.substr(eq + 1));
    if (rhs.empty())
      throw Error("usage", "selector part '" + std::string(part) + "' has no value after '='");
    if (lhs == "frame") return [rhs](const CompileRow& c) { return c.info.frame_name == rhs; };
    return inputDimPredicate(trace, lhs, rhs, part);
  }
  throw Error("usage", "selector part '" + std::string(part) +
                           "' is not understood (expected a compile id, a compile key like 0/1 "
                           "or 0/1:bw, fw|bw|inference|graph, frame=NAME, INPUT=SIZE, "
                           "INPUT.DIM=SIZE or batch=SIZE)");
}

std::string joinDims(const std::vector<std::string>& dims) {
  std::string text;
  for (const auto& d : dims)
    text += (text.empty() ? "" : ",") + d;
  return "[" + text + "]";
}

// The signature's "kind" when it has one; older traces lack it, and there a dotted name
// (Dynamo's source of a module attribute, `self.fc1.weight`) is taken for a parameter.
InputKind inputKind(const nlohmann::json& entry, const std::string& name) {
  static const std::map<std::string, InputKind, std::less<>> kinds = {
      {"input", InputKind::Input},
      {"parameter", InputKind::Parameter},
      {"buffer", InputKind::Buffer}};
  if (entry.contains("kind") && entry["kind"].is_string()) {
    auto it = kinds.find(entry["kind"].get<std::string>());
    if (it != kinds.end()) return it->second;
  }
  return name.find('.') != std::string::npos ? InputKind::Parameter : InputKind::Input;
}

std::vector<CompileInput> inputsFromSignature(const std::string& signatureJson) {
  std::vector<CompileInput> inputs;
  auto signature = nlohmann::json::parse(signatureJson, nullptr, /*allow_exceptions=*/false);
  if (!signature.is_array()) return inputs;
  for (const auto& entry : signature) {
    if (!entry.is_object() || !entry.contains("shape") || !entry["shape"].is_array()) continue;
    CompileInput input;
    if (entry.contains("name") && entry["name"].is_string()) input.name = entry["name"];
    input.kind = inputKind(entry, input.name);
    for (const auto& d : entry["shape"])
      input.dims.push_back(d.is_string() ? d.get<std::string>() : d.dump());
    inputs.push_back(std::move(input));
  }
  return inputs;
}

std::vector<CompileInput> inputsFromFirstSnapshot(const TraceReader& trace, int64_t compileId) {
  std::vector<CompileInput> inputs;
  try {
    for (const PassRow& pass : trace.passes(compileId)) {
      if (!pass.snapshot_id) continue;
      auto graphs = parseModule(trace.snapshot(*pass.snapshot_id).lir);
      if (graphs.empty()) return inputs;
      for (const auto& value : graphs.front()->inputs()) {
        if (!value->type().isTensor()) continue;
        CompileInput input{value->name(), {}};
        for (const auto& d : value->tensorType().shape)
          input.dims.push_back(d.str());
        inputs.push_back(std::move(input));
      }
      return inputs;
    }
  } catch (const std::exception&) {
    // An unreadable snapshot leaves the inputs unnamed; the differ reports the parse error.
  }
  return {};
}

} // namespace

std::vector<CompileInput> compileInputs(const TraceReader& trace, int64_t compileId) {
  std::vector<CompileInput> inputs =
      inputsFromSignature(trace.compile(compileId).info.input_signature_json);
  if (!inputs.empty()) return inputs;
  return inputsFromFirstSnapshot(trace, compileId);
}

std::string describeInputs(const std::vector<CompileInput>& inputs,
                           const std::vector<CompileInput>* other) {
  // The summarised groups, in the order the summary names them.
  enum Group { Parameters, Buffers, Unnamed, kGroups };
  static constexpr std::array<std::string_view, kGroups> kGroupNames = {"parameter", "buffer",
                                                                        "unnamed input"};
  constexpr size_t kMaxListed = 4; // differing summarised inputs listed before "... more"
  std::map<std::string, const CompileInput*> otherByName;
  if (other)
    for (const CompileInput& input : *other)
      if (!input.name.empty()) otherByName.emplace(input.name, &input);
  auto differs = [&](const CompileInput& input, size_t position) {
    const CompileInput* counterpart = nullptr;
    if (!input.name.empty()) {
      auto it = otherByName.find(input.name);
      if (it != otherByName.end()) counterpart = it->second;
    } else if (position < other->size() && (*other)[position].name.empty()) {
      counterpart = &(*other)[position];
    }
    return !counterpart || counterpart->dims != input.dims;
  };
  std::string listed;
  auto list = [&](const CompileInput& input, size_t position) {
    listed += (listed.empty() ? "" : " ") +
              (input.name.empty() ? "#" + std::to_string(position) : input.name) + "=" +
              joinDims(input.dims);
  };
  std::array<size_t, kGroups> unchanged{};
  size_t differingListed = 0, differingUnlisted = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const CompileInput& input = inputs[i];
    Group group = input.name.empty()                   ? Unnamed
                  : input.kind == InputKind::Parameter ? Parameters
                  : input.kind == InputKind::Buffer    ? Buffers
                                                       : kGroups;
    if (group == kGroups) {
      list(input, i);
    } else if (!other || !differs(input, i)) {
      ++unchanged[group];
    } else if (differingListed < kMaxListed) {
      list(input, i);
      ++differingListed;
    } else {
      ++differingUnlisted;
    }
  }
  std::string summary;
  for (size_t g = 0; g < kGroups; ++g)
    if (unchanged[g] > 0)
      summary += std::string(summary.empty() ? "+" : ", ") + std::to_string(unchanged[g]) + " " +
                 std::string(kGroupNames[g]) + (unchanged[g] > 1 ? "s" : "");
  if (!summary.empty() && other) summary += " unchanged";
  if (differingUnlisted > 0)
    summary = "+" + std::to_string(differingUnlisted) + " more that differ" +
              (summary.empty() ? "" : ", " + summary.substr(1));
  if (!summary.empty()) listed += (listed.empty() ? "" : " ") + summary;
  return listed;
}

namespace {

std::string describeCompileWith(const TraceReader& trace, int64_t compileId,
                                const std::vector<CompileInput>* other) {
  const CompileRow c = trace.compile(compileId);
  std::string text = "compile " + std::to_string(c.id) + " (";
  if (!c.info.compile_key.empty()) text += c.info.compile_key + " ";
  text += c.info.graph_kind;
  std::string inputs = describeInputs(compileInputs(trace, compileId), other);
  if (!inputs.empty()) text += ", " + inputs;
  return text + ")";
}

} // namespace

std::string describeCompile(const TraceReader& trace, int64_t compileId) {
  return describeCompileWith(trace, compileId, nullptr);
}

std::string describeCompile(const TraceReader& trace, int64_t compileId,
                            const TraceReader& otherTrace, int64_t otherId) {
  const std::vector<CompileInput> other = compileInputs(otherTrace, otherId);
  return describeCompileWith(trace, compileId, &other);
}

std::vector<int64_t> selectCompiles(const TraceReader& trace, std::string_view selector) {
  std::vector<Predicate> predicates;
  size_t start = 0;
  while (start <= selector.size()) {
    size_t comma = std::min(selector.find(',', start), selector.size());
    std::string part = trim(selector.substr(start, comma - start));
    if (!part.empty()) predicates.push_back(parsePart(trace, part));
    start = comma + 1;
  }
  std::vector<int64_t> ids;
  for (const CompileRow& c : trace.compiles())
    if (std::all_of(predicates.begin(), predicates.end(), [&](const Predicate& p) { return p(c); }))
      ids.push_back(c.id);
  return ids;
}

std::vector<std::pair<int64_t, int64_t>> recompilePairs(const TraceReader& trace) {
  std::map<std::string, int64_t> previous; // frame and graph kind -> its latest compile
  std::vector<std::pair<int64_t, int64_t>> pairs;
  for (const CompileRow& c : trace.compiles()) {
    std::string frame =
        c.info.frame_name.empty()
            ? "run " + std::to_string(c.run_id) + " frame " +
                  c.info.compile_key.substr(0, c.info.compile_key.find('/'))
            : c.info.frame_file + ":" + std::to_string(c.info.frame_line) + " " + c.info.frame_name;
    auto [it, first] = previous.try_emplace(frame + " " + c.info.graph_kind, c.id);
    if (!first) {
      pairs.emplace_back(it->second, c.id);
      it->second = c.id;
    }
  }
  return pairs;
}

} // namespace loupe::diff
