#pragma once

// How record fields that the schema keeps as JSON text are encoded (docs/trace-schema.md
// shows each format). Decoding throws nlohmann::json::exception on malformed text; the
// reader turns that into a TraceError naming the column.

#include "inspector/trace/trace_records.h"

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace loupe {

inline void to_json(nlohmann::json& json, const StackFrame& frame) {
  json = {{"file", frame.file},
          {"line", frame.line},
          {"function", frame.function},
          {"code", frame.code}};
}

// Written out rather than generated: `line` comes from an untrusted file, and converting a
// JSON number that is not an integer (1e300) to int is undefined behaviour.
inline void from_json(const nlohmann::json& json, StackFrame& frame) {
  const nlohmann::json& line = json.at("line");
  if (!line.is_number_integer()) {
    throw nlohmann::json::type_error::create(302, "stack frame line is not an integer", &line);
  }
  frame = {.file = json.at("file").get<std::string>(),
           .line = line.get<int>(),
           .function = json.at("function").get<std::string>(),
           .code = json.at("code").get<std::string>()};
}

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(KernelAlternative, kind, target, why)

inline void to_json(nlohmann::json& json, const CulpritNodeRecord& node) {
  json = {{"name", node.name},
          {"op", node.op},
          {"file", node.file},
          {"line", node.line},
          {"module_path", node.module_path},
          {"fused_group", node.fused_group},
          {"fused_members", node.fused_members}};
}

// Written out for the same reason as StackFrame's.
inline void from_json(const nlohmann::json& json, CulpritNodeRecord& node) {
  const nlohmann::json& line = json.at("line");
  if (!line.is_number_integer()) {
    throw nlohmann::json::type_error::create(302, "culprit node line is not an integer", &line);
  }
  node = {.name = json.at("name").get<std::string>(),
          .op = json.at("op").get<std::string>(),
          .file = json.at("file").get<std::string>(),
          .line = line.get<int>(),
          .module_path = json.at("module_path").get<std::string>(),
          .fused_group = json.at("fused_group").get<std::string>(),
          .fused_members = json.at("fused_members").get<std::vector<std::string>>()};
}

// Compact JSON text; invalid UTF-8 (a file name, say) is replaced rather than refused, so
// odd bytes never stop a record from being stored.
std::string toJsonText(const nlohmann::json& value);

template <class T>
T fromJsonText(std::string_view text) {
  return nlohmann::json::parse(text).get<T>();
}

// A shape is a JSON array whose static dims are numbers and symbolic dims ("s0", "2*s0")
// strings, so SQL can compute with static sizes.
std::string shapeToJson(const std::vector<std::string>& dims);
std::vector<std::string> shapeFromJson(std::string_view text);

// Integers by name ({"s0": 8}, {"%3": 4096}): a memory layout's bindings, offsets and sizes.
// Decoding refuses a value that is not an integer.
std::string namedIntegersToJson(const std::map<std::string, int64_t>& values);
std::map<std::string, int64_t> namedIntegersFromJson(std::string_view text);

} // namespace loupe
