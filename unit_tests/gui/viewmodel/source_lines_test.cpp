// The user's source lines the inspector quotes: read when the file exists, relative paths
// tried against the trace's directory, nothing for a missing file or a line past the end.
#include <gtest/gtest.h>

#include "gui/viewmodel/source_lines.h"
#include "gui_test_support.h"

namespace loupe::view {
namespace {

using testing::ScratchDir;

TEST(SourceLines, QuotesALineOfAFileBesideTheTrace) {
  ScratchDir dir;
  testing::writeFile(dir.file("model.py"), "import torch\n    y = x @ w\n");
  SourceLines lines;
  lines.setBaseDirectory(dir.file(""));
  EXPECT_EQ(lines.line("model.py", 2), "    y = x @ w");
  EXPECT_EQ(lines.line(dir.file("model.py"), 1), "import torch");
  EXPECT_EQ(lines.line("model.py", 3), std::nullopt);
  EXPECT_EQ(lines.line("missing.py", 1), std::nullopt);
  EXPECT_EQ(lines.line("model.py", 0), std::nullopt);
}

} // namespace
} // namespace loupe::view
