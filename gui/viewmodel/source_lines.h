// The user's source lines the node inspector quotes: files are read as text, never run, and
// only when they exist on this machine. A relative path is tried against the working
// directory, then the trace's directory.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace loupe::view {

class SourceLines {
public:
  void setBaseDirectory(std::string directory) { base_ = std::move(directory); }
  // Line `line` (1-based) of file, without its newline; nullopt when unreadable.
  std::optional<std::string> line(const std::string& file, int line);

private:
  static constexpr size_t kMaxFileBytes = 8 << 20; // larger files are not someone's model code
  std::string base_;
  std::map<std::string, std::optional<std::vector<std::string>>> files_;
};

} // namespace loupe::view
