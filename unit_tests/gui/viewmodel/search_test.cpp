// Ctrl+F as a user types it: plain text, or a field prefix; results in graph order.
#include <gtest/gtest.h>

#include "gui/viewmodel/search.h"
#include "gui_test_support.h"

namespace loupe::view {
namespace {

class Search : public ::testing::Test {
protected:
  std::shared_ptr<const GraphModel> model = testing::parse(testing::kSmallGraph);

  std::vector<std::string> names(std::string_view query) const {
    std::vector<std::string> found;
    for (int box : searchBoxes(*model, query))
      found.push_back(model->boxes()[static_cast<size_t>(box)].name);
    return found;
  }
};

using Names = std::vector<std::string>;

TEST_F(Search, PrefixesNarrowTheField) {
  EXPECT_EQ(names("op:mm"), Names{"h"});
  EXPECT_EQ(names("op:aten.add"), Names{"y"});
  EXPECT_EQ(names("name:%t"), Names{"t"});
  EXPECT_EQ(names("name:t"), Names{"t"});
  EXPECT_EQ(names("shape:64,64"), (Names{"w", "t"}));
  EXPECT_EQ(names("shape: f32[s0, 64]"), (Names{"x", "h", "r", "s", "y", "return"}));
  EXPECT_EQ(names("line:5"), Names{"s"});
  EXPECT_EQ(names("line:m.py:3"), (Names{"t", "h"}));
  EXPECT_EQ(names("line:other.py:3"), Names{});
  EXPECT_EQ(names("module:fc1"), (Names{"t", "h"}));
}

TEST_F(Search, PlainTextMatchesAnyFieldCaseInsensitively) {
  EXPECT_EQ(names("RELU"), Names{"r"});              // op
  EXPECT_EQ(names("%s"), Names{"s"});                // name
  EXPECT_EQ(names("f32[64,64]"), (Names{"w", "t"})); // shape
  EXPECT_EQ(names("m.py:4"), Names{"r"});            // source line
  EXPECT_EQ(names("act"), Names{"r"});               // module path
}

TEST_F(Search, EmptyQueryFindsNothing) {
  EXPECT_TRUE(names("").empty());
  EXPECT_TRUE(names("op:").empty());
  EXPECT_TRUE(names("   ").empty());
}

TEST(SearchCursor, WalksResultsInOrderAndWraps) {
  SearchCursor cursor({3, 7, 9});
  EXPECT_EQ(cursor.current(), 3);
  EXPECT_EQ(cursor.next(), 7);
  EXPECT_EQ(cursor.next(), 9);
  EXPECT_EQ(cursor.next(), 3);
  EXPECT_EQ(cursor.previous(), 9);
  EXPECT_EQ(cursor.position(), 2);
  SearchCursor none;
  EXPECT_EQ(none.current(), -1);
  EXPECT_EQ(none.next(), -1);
}

} // namespace
} // namespace loupe::view
