// Every pass that decides describes its decisions only when an instrumentation wants the text:
// the default pipeline over a graph on which each deciding pass decides something leaves every
// description empty for a listener that does not want them, and fills every one for one that
// does.
#include <gtest/gtest.h>

#include <set>

#include "compiler/ir/parser.h"
#include "passes/pipeline.h"

namespace loupe {
namespace {

const char* kGraph = R"(
graph @all(%x: f32[4,8], %y: f32[4,8], %w: f32[8,8], %b: f32[8], %v: f32[1,8]) -> (f32[4,8], f32[4], f32[4,8]) {
  %one = loupe.constant() {data=[1.0], dtype=f32, shape=[]} : f32[]
  %two = loupe.constant() {data=[2.0], dtype=f32, shape=[]} : f32[]
  %three = aten.add.Tensor(%one, %two) {alpha=1} : f32[]
  %0 = aten.mul.Tensor(%x, %one) : f32[4,8]
  %1 = aten.add.Tensor(%0, %y) {alpha=1} : f32[4,8]
  %2 = aten.add.Tensor(%0, %y) {alpha=1} : f32[4,8]
  %3 = aten.mul.Tensor(%1, %2) : f32[4,8]
  %4 = aten.relu(%3) : f32[4,8]
  %dead = aten.neg(%4) : f32[4,8]
  %e = aten.exp(%y) : f32[4,8]
  %6 = aten.mean.dim(%e) {dim=[1], keepdim=false} : f32[4]
  %7 = aten.addmm(%b, %4, %w) : f32[4,8]
  %8 = aten.mul.Tensor(%7, %three) : f32[4,8]
  %ve = aten.expand(%v) {size=[4,8]} : f32[4,8]<strides=[0,1]>
  %m = aten.mm(%ve, %w) : f32[4,8]
  %9 = aten.add.Tensor(%8, %m) {alpha=1} : f32[4,8]
  return %4, %6, %9
}
)";

class DecisionLog : public PassInstrumentation {
public:
  explicit DecisionLog(bool wantsText) : wantsText_(wantsText) {}
  void onDecision(const Decision& decision) override { decisions.push_back(decision); }
  bool wantsDecisionText() const override { return wantsText_; }
  std::vector<Decision> decisions;

private:
  bool wantsText_;
};

std::vector<Decision> runDefaultPipeline(bool wantsText) {
  auto graph = parseGraph(kGraph);
  DecisionLog log(wantsText);
  PipelineOptions options;
  Plan plan;
  PassContext ctx(options, log, plan);
  PassManager manager;
  addPasses(manager, defaultPipeline());
  manager.run(*graph, ctx);
  return log.decisions;
}

std::set<std::string> passesOf(const std::vector<Decision>& decisions) {
  std::set<std::string> passes;
  for (const Decision& d : decisions)
    passes.insert(d.pass);
  return passes;
}

const std::set<std::string> kDecidingPasses = {
    "decomposition", "constant-folding", "algebraic-simplification", "cse",
    "dce",           "layout",           "pointwise-fusion",         "reduction-fusion"};

TEST(DecisionText, NoPassDescribesForAListenerThatDoesNotWantIt) {
  std::vector<Decision> decisions = runDefaultPipeline(/*wantsText=*/false);
  EXPECT_EQ(passesOf(decisions), kDecidingPasses);
  for (const Decision& d : decisions)
    EXPECT_EQ(d.description, "") << d.pass << " decision " << d.ordinal;
}

TEST(DecisionText, EveryPassDescribesForAListenerThatWantsIt) {
  std::vector<Decision> decisions = runDefaultPipeline(/*wantsText=*/true);
  EXPECT_EQ(passesOf(decisions), kDecidingPasses);
  for (const Decision& d : decisions)
    EXPECT_NE(d.description, "") << d.pass << " decision " << d.ordinal;
}

} // namespace
} // namespace loupe
