// SymExpr: canonical forms (what makes symbolic shapes comparable), Python floor semantics,
// evaluation and the text spelling shared with the .lir format.
#include "compiler/ir/sym_expr.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace loupe {
namespace {

const SymExpr s0 = SymExpr::symbol("s0");
const SymExpr s1 = SymExpr::symbol("s1");

TEST(SymExprTest, EqualPolynomialsHaveOneCanonicalForm) {
  EXPECT_EQ(s0 + s0, 2 * s0);
  EXPECT_EQ((s0 + 1) * (s0 - 1), s0 * s0 - 1);
  EXPECT_EQ(s1 * s0, s0 * s1);
  EXPECT_EQ(s0 - s0, SymExpr(0));
  EXPECT_EQ((2 * s0 + 1).str(), "2*s0 + 1");
  EXPECT_EQ((1 - s0).str(), "-s0 + 1");
  EXPECT_TRUE((s0 - s0).isConstant());
}

TEST(SymExprTest, FloorDivisionSimplifiesDivisibleTerms) {
  EXPECT_EQ(SymExpr::floorDiv(s0 * 2, 2), s0);
  EXPECT_EQ(SymExpr::floorDiv(2 * s0 + 1, 2), s0);
  EXPECT_EQ(SymExpr::floorDiv(4 * s0 + 6, 2), 2 * s0 + 3);
  EXPECT_EQ(SymExpr::floorDiv(s0 * s1, s1), s0);
  EXPECT_FALSE(SymExpr::floorDiv(s0, 2).isConstant());
}

// Two stride-2 stages: torch prints the size as s0//4, shape inference reaches (s0//2)//2. The
// identity holds for every integer s0, negative ones included, so it is applied whatever s0 is.
TEST(SymExprTest, NestedFloorDivisionsByConstantsCombine) {
  EXPECT_EQ(SymExpr::floorDiv(SymExpr::floorDiv(s0, 2), 2), SymExpr::floorDiv(s0, 4));
  EXPECT_EQ(SymExpr::floorDiv(SymExpr::floorDiv(s0 - 1, 4), 2), SymExpr::floorDiv(s0 - 1, 8));
  EXPECT_EQ(SymExpr::floorDiv(SymExpr::floorDiv(s0, 2) + 2, 2), SymExpr::floorDiv(s0, 4) + 1);
  for (int64_t v = -20; v <= 20; ++v)
    EXPECT_EQ(SymExpr::floorDiv(SymExpr::floorDiv(s0, 3), 2).evaluate({{"s0", v}}),
              SymExpr::floorDiv(s0, 6).evaluate({{"s0", v}}))
        << v;
  // Not combined: a negative divisor, or a multiple of the inner division (2*(s0//2) is not s0).
  EXPECT_NE(SymExpr::floorDiv(SymExpr::floorDiv(s0, 2), -2), SymExpr::floorDiv(s0, -4));
  EXPECT_EQ(SymExpr::floorDiv(2 * SymExpr::floorDiv(s0, 2), 2), SymExpr::floorDiv(s0, 2));
}

TEST(SymExprTest, DivisionAndModuloRoundTowardsNegativeInfinity) {
  EXPECT_EQ(SymExpr::floorDiv(-7, 2), SymExpr(-4));
  EXPECT_EQ(SymExpr::floorDiv(7, -2), SymExpr(-4));
  EXPECT_EQ(SymExpr::mod(-7, 2), SymExpr(1));
  EXPECT_EQ(SymExpr::mod(7, -2), SymExpr(-1));
  EXPECT_EQ(SymExpr::mod(4 * s0 + 5, 4), SymExpr(1));
  EXPECT_EQ(SymExpr::mod(s0 * s1, s1), SymExpr(0));
  SymExpr half = SymExpr::floorDiv(s0 - 3, 2);
  EXPECT_EQ(half.evaluate({{"s0", 0}}), -2);
  EXPECT_EQ(SymExpr::mod(s0, 3).evaluate({{"s0", -4}}), 2);
  EXPECT_THROW(SymExpr::floorDiv(s0, 0), std::domain_error);
  EXPECT_THROW(SymExpr::mod(s0, 0), std::domain_error);
}

TEST(SymExprTest, ExactDivisionOnlyWhenEveryTermDivides) {
  EXPECT_EQ((s0 * s1).exactDiv(s0), s1);
  EXPECT_EQ((6 * s0 * s1 + 4 * s0).exactDiv(2 * s0), 3 * s1 + 2);
  EXPECT_EQ((s0 + 1).exactDiv(s0 + 1), SymExpr(1));
  EXPECT_FALSE((2 * s0 + 1).exactDiv(2).has_value());
  EXPECT_FALSE(s0.exactDiv(s1).has_value());
  EXPECT_FALSE(s0.exactDiv(0).has_value());
}

// torch spells a size under its divisibility guards (24*(s0//8) where s0 is a multiple of 8),
// Loupe from the numel (3*s0): the verifier and shape inference accept such pairs, and only
// such pairs.
TEST(SymExprTest, EqualWhenDivisionsExactAcceptsTorchsSpellings) {
  auto equal = [](const SymExpr& a, const SymExpr& b) {
    return SymExpr::equalWhenDivisionsExact(a, b);
  };
  EXPECT_TRUE(equal(24 * SymExpr::floorDiv(s0, 8), 3 * s0));
  EXPECT_TRUE(equal(SymExpr::floorDiv(4 * s0, 8), SymExpr::floorDiv(s0, 2)));
  EXPECT_TRUE(equal(SymExpr::floorDiv(s0, SymExpr::floorDiv(s0, 2)), 2));
  EXPECT_TRUE(equal(SymExpr::floorDiv(192 * SymExpr::floorDiv(s0, 8), s0), 24));
  EXPECT_TRUE(equal(s0 * s1, s1 * s0));
  // Simplifications that make such pairs identical outright.
  EXPECT_EQ(SymExpr::floorDiv(24 * s0, 48), SymExpr::floorDiv(s0, 2));
  EXPECT_EQ(SymExpr::floorDiv(s1 * s0, 2 * s1), SymExpr::floorDiv(s0, 2));
  EXPECT_FALSE(equal(24 * SymExpr::floorDiv(s0, 8), 4 * s0));
  EXPECT_FALSE(equal(SymExpr::floorDiv(s0, 2), s0));
  EXPECT_FALSE(equal(s0, s1));
  EXPECT_FALSE(equal(s0 * s0, 2 * s0));
  EXPECT_FALSE(equal(20, 24));
}

TEST(SymExprTest, EvaluateNamesTheUnboundSymbol) {
  SymExpr e = s0 * s1 + SymExpr::floorDiv(s0, 4);
  EXPECT_EQ(e.evaluate({{"s0", 8}, {"s1", 3}}), 26);
  try {
    e.evaluate({{"s0", 8}});
    FAIL() << "evaluating with s1 unbound should throw";
  } catch (const std::out_of_range& error) {
    EXPECT_NE(std::string(error.what()).find("s1"), std::string::npos) << error.what();
  }
}

TEST(SymExprTest, SubstituteRebuildsCanonicalForm) {
  SymExpr e = 2 * s0 + 1;
  EXPECT_EQ(e.substitute({{"s0", s1 + 1}}), 2 * s1 + 3);
  EXPECT_EQ(SymExpr::floorDiv(s0, 2).substitute({{"s0", SymExpr(9)}}), SymExpr(4));
  EXPECT_EQ(e.substitute({{"s7", SymExpr(3)}}), e);
  EXPECT_EQ((s0 * s1).symbols(), (std::vector<std::string>{"s0", "s1"}));
}

// Every spelling str() produces parses back to the same expression.
TEST(SymExprTest, ParsePrintRoundTrip) {
  const std::vector<SymExpr> forms = {
      SymExpr(0),
      SymExpr(-5),
      SymExpr(9223372036854775807),
      s0,
      2 * s0 + 1,
      -s0 - 1,
      s0 * s1 * s1,
      s0 * s0 * s0 - 3 * s1,
      SymExpr::floorDiv(s0 - 3, 2) + 1,
      SymExpr::floorDiv(s0, s1),
      2 * SymExpr::floorDiv(s0 + 1, 4) * s1,
      SymExpr::mod(s1, 8),
      SymExpr::mod(s0 + 1, s1) * SymExpr::mod(s0 + 1, s1),
      SymExpr::floorDiv(SymExpr::mod(s0, 3) + s1, 5),
  };
  for (const SymExpr& e : forms) {
    SymExpr parsed = SymExpr::parse(e.str());
    EXPECT_EQ(parsed, e) << e.str() << " parsed as " << parsed.str();
  }
}

TEST(SymExprTest, ParseAcceptsThePythonSpellings) {
  EXPECT_EQ(SymExpr::parse("(s0 - 3)//2 + 1"), SymExpr::floorDiv(s0 - 3, 2) + 1);
  EXPECT_EQ(SymExpr::parse("s0**2"), s0 * s0);
  EXPECT_EQ(SymExpr::parse("s1 % 8"), SymExpr::mod(s1, 8));
  EXPECT_EQ(SymExpr::parse("-(s0 + 2)*3"), -3 * s0 - 6);
}

TEST(SymExprTest, ParseStopsAtTheFirstCharacterThatCannotContinue) {
  size_t pos = 0;
  EXPECT_EQ(SymExpr::parse("s0 + 1, 128]", pos), s0 + 1);
  EXPECT_EQ(pos, 6u);
}

TEST(SymExprTest, ParseFailuresCarryTheOffset) {
  for (auto [text, offset] : std::vector<std::pair<std::string, size_t>>{
           {"s0 + ", 5}, {"(s0", 3}, {"s0 + )", 5}, {"99999999999999999999", 0}, {"s0 ** x", 6}}) {
    try {
      SymExpr::parse(text);
      ADD_FAILURE() << "'" << text << "' should not parse";
    } catch (const SymExpr::ParseFailure& failure) {
      EXPECT_EQ(failure.offset, offset) << text << ": " << failure.message;
    }
  }
}

// Dims come from untrusted files: arithmetic that leaves int64 is a clear error, not undefined
// behaviour, and an expression cannot be made to grow without bound.
TEST(SymExprLimits, OverflowIsAnErrorNotUndefinedBehaviour) {
  EXPECT_THROW(SymExpr::parse("99999999999*99999999999"), SymExpr::ParseFailure);
  EXPECT_THROW(SymExpr::parse("9223372036854775807 + 1"), SymExpr::ParseFailure);
  SymExpr big = SymExpr::symbol("s0") * SymExpr(int64_t{1} << 40);
  EXPECT_THROW(big.evaluate({{"s0", int64_t{1} << 30}}), std::overflow_error);
  EXPECT_EQ(big.evaluate({{"s0", 2}}), int64_t{1} << 41);
}

TEST(SymExprLimits, ExpressionsCannotGrowWithoutBound) {
  EXPECT_THROW(SymExpr::parse("s0**65"), SymExpr::ParseFailure);
  // (a0+b0)*(a1+b1)*... doubles the term count each time.
  SymExpr product(1);
  EXPECT_THROW(
      {
        for (int i = 0; i < 20; ++i)
          product = product * (SymExpr::symbol("a" + std::to_string(i)) +
                               SymExpr::symbol("b" + std::to_string(i)));
      },
      std::length_error);
}

} // namespace
} // namespace loupe
