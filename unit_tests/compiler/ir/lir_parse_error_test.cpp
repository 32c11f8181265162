// Parse errors point at the offending token (file:line:column) and say what was expected;
// no input, however mangled, crashes or hangs the parser.
#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include "compiler/ir/error.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "random_graph.h"

namespace loupe {
namespace {

struct ErrorCase {
  const char* text;
  int line, column;
  const char* message; // a fragment of Error::message()
};

const char* kValid =
    "graph @f(%x: f32[s0]) -> (f32[s0]) {\n  %y = aten.neg(%x) : f32[s0]\n  return %y\n}\n";

TEST(LirParseErrorTest, ErrorsNameLineColumnAndExpectation) {
  const ErrorCase cases[] = {
      {"graph @f() -> () {\n  %0 = a() {k=1} {j=2} : f32[]\n  return\n}", 2, 18,
       "expected ':' before result types, found '{'"},
      {"graph @f() -> () {\n  %0 = aten.neg(%x) : f32[]\n  return %0\n}", 2, 17,
       "use of undefined value %x"},
      {"graph @f(%x: f32[]) -> () {\n  %x = a() : f32[]\n  return\n}", 2, 3,
       "value %x is defined twice"},
      {"graph @f() -> () {\n  %a, %a = a() : (f32[], f32[])\n  return\n}", 2, 7,
       "value %a is defined twice"},
      {"graph @f(%x: g32[4]) -> () {\n  return\n}", 1, 14, "unknown dtype 'g32'"},
      {"graph @f(%x: f32[4, 2]<strides=[1]>) -> () {\n  return\n}", 1, 32,
       "strides has 1 entries but the shape has 2 dimensions"},
      {"graph @f() -> () {\n  %0 = a() {s=\"abc} : f32[]\n  return\n}", 2, 15,
       "unterminated string"},
      {"graph @f() -> () {\n  %0 = a() {s=\"a\\qb\"} : f32[]\n  return\n}", 2, 17,
       "unknown escape '\\q'"},
      {"graph @f() -> () {\n  %0 = a() {n=99999999999999999999} : f32[]\n  return\n}", 2, 15,
       "integer out of range"},
      {"graph @f() -> () {\n  %0 = a() : f32[]  loc(\"a.py\":99999999999)\n  return\n}", 2, 32,
       "integer out of range"},
      {"graph @f(%x: f32[4]) -> (f32[8]) {\n  return %x\n}", 2, 10,
       "returned value %x has type f32[4] but the signature declares f32[8]"},
      {"graph @f(%x: f32[4]) -> (f32[4], f32[4]) {\n  return %x\n}", 2, 3,
       "returns 1 values but its signature declares 2 output types"},
      {"graph @f() -> () {\n  return\n}\n}", 4, 1, "expected 'graph' to start a graph, found '}'"},
      {"graph @f() -> () {\n  return\n} garbage", 3, 3,
       "expected 'graph' to start a graph, found 'garbage'"},
      {"graph @f() -> () {\n  %0 = a() : f32[s0 + ]\n  return\n}", 2, 23, "expected a dimension"},
      {"graph @f() -> () {\n  %0 = a() : (f32[], f32[])\n  return\n}", 2, 14,
       "a defines 1 results but lists 2 result types"},
      {"graph @f() -> () {\n  %0 = a() : f32[]\n", 3, 1,
       "expected a node or 'return', found end of input"},
      {"graph @f() -> () {\n  yield\n}", 2, 3, "expected a node or 'return', found 'yield'"},
      {"graph @f(%x: f32[]) -> () {\n  %0 = loupe.fused(%x) : f32[] {\n    ^(%a: f32[]):\n"
       "      %b = n(%x) : f32[]\n      yield %b\n  }\n  return\n}",
       4, 14, "use of undefined value %x"},
      {"graph @f() -> () {\n  %0 = a() {l=[1, true]} : f32[]\n  return\n}", 2, 15,
       "cannot mix bools"},
      {"graph @f() -> () {\n  %0 = a() {l=[1.5, s0]} : f32[]\n  return\n}", 2, 21,
       "symbolic integer s0"},
      {"graph @f() -> () {\n  %0 = a() : f32[s0**1000]\n  return\n}", 2, 20, "exponent too large"},
      {"", 1, 1, "expected 'graph' to start a graph, found end of input"},
  };
  for (const ErrorCase& c : cases) {
    SCOPED_TRACE(c.text);
    try {
      parseModule(c.text, "bad.lir");
      ADD_FAILURE() << "parsed without error";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), "parse");
      EXPECT_EQ(e.context().file, "bad.lir");
      EXPECT_EQ(e.context().line, c.line) << e.what();
      EXPECT_EQ(e.context().column, c.column) << e.what();
      EXPECT_NE(e.message().find(c.message), std::string::npos) << e.what();
    }
  }
}

TEST(LirParseErrorTest, WhatFormatsFileLineColumn) {
  try {
    parseGraph("graph @f() -> () {\n  %0 = a() {k=1} {j=2} : f32[]\n  return\n}", "bad.lir");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "bad.lir:2:18: parse error: expected ':' before result types, found '{'");
  }
}

TEST(LirParseErrorTest, ParseGraphWantsExactlyOneGraph) {
  std::string two = std::string(kValid) + kValid;
  EXPECT_THROW(parseGraph(two), Error);
  EXPECT_EQ(parseModule(two).size(), 2u);
}

TEST(LirParseErrorTest, UnreadableFileIsNamed) {
  try {
    parseFile("/nonexistent/dir/model.lir");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.context().file, "/nonexistent/dir/model.lir");
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/model.lir"), std::string::npos);
  }
  EXPECT_THROW(parseFile("/tmp"), Error);
}

TEST(LirParseErrorTest, ParseFileReadsAModule) {
  std::string path = ::testing::TempDir() + "/ir_tests_module.lir";
  std::ofstream(path) << kValid;
  auto graphs = parseFile(path);
  ASSERT_EQ(graphs.size(), 1u);
  EXPECT_EQ(toText(*graphs[0]), kValid);
}

TEST(LirParseErrorTest, DeepNestingIsAnErrorNotACrash) {
  std::string parens =
      "graph @f() -> () {\n  %0 = a() : f32[" + std::string(100000, '(') + "s0]\n  return\n}";
  EXPECT_THROW(parseModule(parens), Error);
  std::string minuses =
      "graph @f() -> () {\n  %0 = a() : f32[" + std::string(100000, '-') + "1]\n  return\n}";
  EXPECT_THROW(parseModule(minuses), Error);
  std::string bodies = "graph @f() -> () {\n";
  for (int i = 0; i < 100000; ++i)
    bodies += "%v = loupe.fused() : f32[] { ^():\n";
  EXPECT_THROW(parseModule(bodies), Error);
}

// Truncations, byte flips, insertions and deletions of valid text either parse or throw
// loupe::Error; anything else (a crash, another exception) fails the test.
TEST(LirParseErrorTest, MutatedTextNeverCrashes) {
  std::mt19937_64 rng(12345);
  auto below = [&](size_t n) {
    return n ? std::uniform_int_distribution<size_t>(0, n - 1)(rng) : 0;
  };
  const std::string tokens[] = {"%",     "@",      "\"",    "\\",     "{",
                                "}",     "(",      ")",     "[",      "]",
                                "<",     ">",      ",",     ":",      "=",
                                "^",     "none",   "yield", "return", "graph",
                                "//",    "**",     "-",     "loc(",   "9999999999999999999999",
                                "1e999", "index<", "\n",    "\x80"};
  int parsed = 0;
  for (int i = 0; i < 1000; ++i) {
    std::string text = toText(*testing::randomGraph(1000 + static_cast<uint64_t>(i) % 50));
    for (size_t edits = 1 + below(3); edits > 0; --edits) {
      size_t at = below(text.size() + 1);
      switch (below(4)) {
      case 0:
        text.resize(at);
        break;
      case 1:
        if (at < text.size()) text[at] = static_cast<char>(below(256));
        break;
      case 2:
        text.insert(at, tokens[below(std::size(tokens))]);
        break;
      default:
        text.erase(at, below(8));
        break;
      }
    }
    try {
      for (const auto& g : parseModule(text))
        toText(*g);
      ++parsed;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), "parse") << e.what();
      EXPECT_GT(e.context().line, 0) << e.what();
    }
  }
  // Some mutations keep the text valid (an edit inside a string, a deleted space).
  EXPECT_GT(parsed, 0);
}

} // namespace
} // namespace loupe
