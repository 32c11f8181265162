// The recent-files list: most recent first, no duplicates, at most kLimit, kept in
// $XDG_CONFIG_HOME/loupe/recent across instances.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "gui/viewmodel/recent_files.h"
#include "gui_test_support.h"

namespace loupe::view {
namespace {

using testing::ScratchDir;

TEST(RecentFiles, KeepsTheLastTracesMostRecentFirst) {
  ScratchDir dir;
  const char* saved = std::getenv("XDG_CONFIG_HOME");
  const std::string previous = saved != nullptr ? saved : "";
  setenv("XDG_CONFIG_HOME", dir.file("config").c_str(), 1);
  {
    RecentFiles recent;
    EXPECT_TRUE(recent.paths().empty());
    for (size_t i = 0; i < RecentFiles::kLimit + 2; ++i)
      recent.add(dir.file("t" + std::to_string(i) + ".db"));
    recent.add(dir.file("t5.db"));
  }
  const RecentFiles reread;
  ASSERT_EQ(reread.paths().size(), RecentFiles::kLimit);
  EXPECT_EQ(reread.paths()[0], dir.file("t5.db")) << "re-opened: moved to the front, once";
  EXPECT_EQ(reread.paths()[1], dir.file("t11.db"));
  EXPECT_EQ(std::count(reread.paths().begin(), reread.paths().end(), dir.file("t5.db")), 1);
  if (saved != nullptr)
    setenv("XDG_CONFIG_HOME", previous.c_str(), 1);
  else
    unsetenv("XDG_CONFIG_HOME");
}

} // namespace
} // namespace loupe::view
