#include "inspector/trace/trace_json.h"

#include <algorithm>
#include <cctype>

namespace loupe {
namespace {

// Digits that print back identically from an int64 ("0128" would not).
bool isCanonicalInteger(std::string_view dim) {
  bool digits =
      !dim.empty() && dim.size() <= 18 &&
      std::all_of(dim.begin(), dim.end(), [](unsigned char c) { return std::isdigit(c); });
  return digits && (dim == "0" || dim.front() != '0');
}

} // namespace

std::string toJsonText(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string shapeToJson(const std::vector<std::string>& dims) {
  nlohmann::json array = nlohmann::json::array();
  for (const std::string& dim : dims) {
    if (isCanonicalInteger(dim))
      array.push_back(std::stoll(dim));
    else
      array.push_back(dim);
  }
  return toJsonText(array);
}

std::vector<std::string> shapeFromJson(std::string_view text) {
  std::vector<std::string> dims;
  for (const nlohmann::json& dim : nlohmann::json::parse(text).get<std::vector<nlohmann::json>>()) {
    dims.push_back(dim.is_number_integer() ? std::to_string(dim.get<int64_t>())
                                           : dim.get<std::string>());
  }
  return dims;
}

std::string namedIntegersToJson(const std::map<std::string, int64_t>& values) {
  return toJsonText(nlohmann::json(values));
}

std::map<std::string, int64_t> namedIntegersFromJson(std::string_view text) {
  nlohmann::json object = nlohmann::json::parse(text);
  if (!object.is_object())
    throw nlohmann::json::type_error::create(302, "expected an object of integers", &object);
  std::map<std::string, int64_t> values;
  for (const auto& [name, value] : object.items()) {
    if (!value.is_number_integer())
      throw nlohmann::json::type_error::create(302, "value of " + name + " is not an integer",
                                               &value);
    values[name] = value.get<int64_t>();
  }
  return values;
}

} // namespace loupe
