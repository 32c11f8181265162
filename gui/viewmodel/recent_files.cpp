#include "gui/viewmodel/recent_files.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace loupe::view {
namespace {

std::string recentFilesPath() {
  if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg != nullptr && *xdg != '\0')
    return std::string(xdg) + "/loupe/recent";
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0')
    return std::string(home) + "/.config/loupe/recent";
  return {};
}

} // namespace

RecentFiles::RecentFiles() : file_(recentFilesPath()) {
  std::ifstream in(file_);
  for (std::string line; paths_.size() < kLimit && std::getline(in, line);)
    if (!line.empty()) paths_.push_back(line);
}

void RecentFiles::add(const std::string& path) {
  std::error_code ec;
  const std::string absolute = std::filesystem::absolute(path, ec).lexically_normal().string();
  const std::string& entry = ec ? path : absolute;
  std::erase(paths_, entry);
  paths_.insert(paths_.begin(), entry);
  if (paths_.size() > kLimit) paths_.resize(kLimit);
  if (file_.empty()) return;
  std::filesystem::create_directories(std::filesystem::path(file_).parent_path(), ec);
  std::ofstream out(file_, std::ios::trunc);
  for (const std::string& p : paths_)
    out << p << '\n';
}

} // namespace loupe::view
