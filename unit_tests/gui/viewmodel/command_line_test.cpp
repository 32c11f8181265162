// loupe-view's command line: every option parsed, and each mistake a one-line usage error
// naming the argument (the program's own test, loupe-view.command-line, checks the exits).
#include <gtest/gtest.h>

#include "compiler/ir/error.h"
#include "gui/viewmodel/command_line.h"

namespace loupe::view {
namespace {

std::string usageErrorOf(const std::vector<std::string>& args) {
  try {
    parseCommandLine(args);
  } catch (const Error& e) {
    return e.message();
  }
  return "no error";
}

TEST(CommandLine, ParsesAHeadlessRun) {
  const CommandLine cl =
      parseCommandLine({"t.db", "--screenshot", "o.png", "--select", "compile=2,pass=cse,node=%h",
                        "--size", "800x600", "--diff", "1,2"});
  EXPECT_EQ(cl.tracePath, "t.db");
  EXPECT_EQ(cl.screenshotPath, "o.png");
  EXPECT_EQ(cl.select.compile, 2);
  EXPECT_EQ(cl.select.pass, "cse");
  EXPECT_EQ(cl.select.node, "h") << "the % is optional";
  EXPECT_EQ(cl.width, 800);
  EXPECT_EQ(cl.height, 600);
  ASSERT_TRUE(cl.diff.has_value());
  EXPECT_EQ(*cl.diff, (std::pair<long, long>{1, 2}));
  EXPECT_EQ(cl.panel, PanelTab::Diff) << "--diff implies the diff panel";
}

TEST(CommandLine, NamesTheArgumentAtFault) {
  EXPECT_NE(usageErrorOf({"t.db", "--panel", "nope"}).find("--panel: 'nope'"), std::string::npos);
  EXPECT_NE(usageErrorOf({"t.db", "--select", "colour=red"}).find("unknown key 'colour'"),
            std::string::npos);
  EXPECT_NE(usageErrorOf({"t.db", "--size", "10x10"}).find("--size"), std::string::npos);
  EXPECT_NE(usageErrorOf({"--screenshot", "o.png"}).find("needs a trace"), std::string::npos);
  EXPECT_NE(usageErrorOf({"a.db", "b.db"}).find("more than one trace"), std::string::npos);
}

} // namespace
} // namespace loupe::view
