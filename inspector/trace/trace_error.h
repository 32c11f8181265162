#pragma once

// The one exception type of the trace store. Its message always starts with the trace's
// path, so it can be shown to the user as is.

#include <stdexcept>
#include <string>
#include <string_view>

namespace loupe {

class TraceError : public std::runtime_error {
public:
  TraceError(const std::string& path, std::string_view problem)
      : std::runtime_error(path + ": " + std::string(problem)), path_(path) {}

  const std::string& path() const { return path_; }

private:
  std::string path_;
};

} // namespace loupe
