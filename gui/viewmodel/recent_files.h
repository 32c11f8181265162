// The traces opened last, most recent first, kept in $XDG_CONFIG_HOME/loupe/recent
// (~/.config/loupe/recent without XDG_CONFIG_HOME), one path per line. A missing or
// unwritable file only means no history.
#pragma once

#include <string>
#include <vector>

namespace loupe::view {

class RecentFiles {
public:
  static constexpr size_t kLimit = 10;

  RecentFiles(); // reads the file
  const std::vector<std::string>& paths() const { return paths_; }
  void add(const std::string& path); // moves it to the front and writes the file

private:
  std::string file_;
  std::vector<std::string> paths_;
};

} // namespace loupe::view
