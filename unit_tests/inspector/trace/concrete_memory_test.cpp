// How readers show the binding a symbolic plan was laid out at (the viewer's memory panel and
// `loupe show` both print it).
#include "inspector/trace/concrete_memory.h"

#include <gtest/gtest.h>

namespace loupe {
namespace {

TEST(BindingsText, NamesEachSymbolWithItsValueInOrder) {
  EXPECT_EQ(bindingsText({}), "");
  EXPECT_EQ(bindingsText({{"s0", 8}}), "s0=8");
  EXPECT_EQ(bindingsText({{"s1", 4}, {"s0", 8}}), "s0=8, s1=4");
}

} // namespace
} // namespace loupe
