#include "gui/viewmodel/source_lines.h"

#include <filesystem>
#include <fstream>

namespace loupe::view {
namespace {

std::optional<std::vector<std::string>> readLines(const std::filesystem::path& path,
                                                  size_t maxBytes) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec) ||
      std::filesystem::file_size(path, ec) > maxBytes || ec)
    return std::nullopt;
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string text; std::getline(in, text);)
    lines.push_back(std::move(text));
  return lines;
}

} // namespace

std::optional<std::string> SourceLines::line(const std::string& file, int line) {
  if (file.empty() || line <= 0) return std::nullopt;
  auto it = files_.find(file);
  if (it == files_.end()) {
    auto lines = readLines(file, kMaxFileBytes);
    if (!lines && !base_.empty() && std::filesystem::path(file).is_relative())
      lines = readLines(std::filesystem::path(base_) / file, kMaxFileBytes);
    it = files_.emplace(file, std::move(lines)).first;
  }
  if (!it->second || static_cast<size_t>(line) > it->second->size()) return std::nullopt;
  return (*it->second)[line - 1];
}

} // namespace loupe::view
