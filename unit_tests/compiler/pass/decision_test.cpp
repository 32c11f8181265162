// PassContext::decide: every decision is numbered and reported, and its description is built
// only when some instrumentation wants decision text, once, whatever the number of listeners.
#include <gtest/gtest.h>

#include "compiler/pass/pass.h"

namespace loupe {
namespace {

class DecisionLog : public PassInstrumentation {
public:
  explicit DecisionLog(bool wantsText) : wantsText_(wantsText) {}
  void onDecision(const Decision& decision) override { decisions.push_back(decision); }
  bool wantsDecisionText() const override { return wantsText_; }
  std::vector<Decision> decisions;

private:
  bool wantsText_;
};

// Makes `count` decisions through `instrumentation`; returns how often a description was built.
int decideCounting(PassInstrumentation& instrumentation, int count, int bisectLimit = -1) {
  PipelineOptions options;
  options.bisectLimit = bisectLimit;
  Plan plan;
  PassContext ctx(options, instrumentation, plan);
  ctx.setCurrentPass("test");
  int built = 0;
  for (int i = 0; i < count; ++i)
    ctx.decide("rewrite",
               [&] {
                 ++built;
                 return "rewrite " + std::to_string(i);
               },
               {"n" + std::to_string(i)});
  return built;
}

TEST(DecisionText, NotBuiltWithoutInstrumentation) {
  PassInstrumentation none;
  EXPECT_EQ(decideCounting(none, 3), 0);
}

TEST(DecisionText, NotBuiltWhenNoListenerWantsItButDecisionsAreStillReported) {
  DecisionLog log(/*wantsText=*/false);
  EXPECT_EQ(decideCounting(log, 3), 0);
  ASSERT_EQ(log.decisions.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(log.decisions[i].ordinal, static_cast<int>(i) + 1);
    EXPECT_EQ(log.decisions[i].pass, "test");
    EXPECT_EQ(log.decisions[i].kind, "rewrite");
    EXPECT_EQ(log.decisions[i].nodes, std::vector<std::string>{"n" + std::to_string(i)});
    EXPECT_EQ(log.decisions[i].description, "");
  }
}

TEST(DecisionText, BuiltOncePerDecisionWhenWanted) {
  DecisionLog log(/*wantsText=*/true);
  EXPECT_EQ(decideCounting(log, 3), 3);
  ASSERT_EQ(log.decisions.size(), 3u);
  EXPECT_EQ(log.decisions[2].description, "rewrite 2");
}

TEST(DecisionText, RefusedDecisionsAreDescribedToo) {
  DecisionLog log(/*wantsText=*/true);
  EXPECT_EQ(decideCounting(log, 3, /*bisectLimit=*/1), 3);
  ASSERT_EQ(log.decisions.size(), 3u);
  EXPECT_TRUE(log.decisions[0].applied);
  EXPECT_FALSE(log.decisions[1].applied);
  EXPECT_EQ(log.decisions[1].description, "rewrite 1");
}

TEST(DecisionText, AListWantsItWhenAnyMemberDoes) {
  DecisionLog quiet(false), reader(true);
  InstrumentationList onlyQuiet;
  onlyQuiet.add(&quiet);
  EXPECT_EQ(decideCounting(onlyQuiet, 2), 0);

  quiet.decisions.clear();
  InstrumentationList both;
  both.add(&quiet);
  both.add(&reader);
  EXPECT_EQ(decideCounting(both, 2), 2); // built once, shared by both
  ASSERT_EQ(quiet.decisions.size(), 2u);
  EXPECT_EQ(quiet.decisions[1].description, "rewrite 1");
  EXPECT_EQ(reader.decisions[1].description, "rewrite 1");
}

} // namespace
} // namespace loupe
