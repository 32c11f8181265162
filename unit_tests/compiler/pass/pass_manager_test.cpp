// The pass manager, not the pass, tells what a pass changed: from fingerprints of the graph and
// the Plan taken around it. A pass that does nothing is unchanged, every edit of what the .lir
// text shows is a graph change (fused bodies included), and a pass that fills only the Plan is a
// plan change, which --print-after-change does not print.
#include <gtest/gtest.h>

#include <functional>
#include <sstream>

#include "compiler/ir/parser.h"
#include "compiler/pass/fingerprint.h"
#include "compiler/pass/ir_printing.h"
#include "compiler/pass/pass_manager.h"

namespace loupe {
namespace {

const char* kGraph = R"(
graph @g(%x: f32[4,8], %y: f32[4,8]) -> (f32[4,8], f32[4,8]) {
  %s = aten.add.Tensor(%x, %y) {alpha=1} : f32[4,8]
  %f = loupe.fused(%s, %y) {kind="pointwise"} : f32[4,8] {
    ^(%a: f32[4,8], %b: f32[4,8]):
      %0 = aten.mul.Tensor(%a, %b) : f32[4,8]
      %1 = aten.add.Tensor(%0, %a) {alpha=2} : f32[4,8]
      yield %1
  }
  return %s, %f
}
)";

using Edit = std::function<void(Graph&, PassContext&)>;

// A pass that applies `edit` and nothing else.
class EditPass : public Pass {
public:
  EditPass(std::string name, Edit edit) : name_(std::move(name)), edit_(std::move(edit)) {}
  std::string_view name() const override { return name_; }
  std::string_view description() const override { return "applies a test edit"; }
  void run(Graph& graph, PassContext& ctx) override { edit_(graph, ctx); }

private:
  std::string name_;
  Edit edit_;
};

class RunLog : public PassInstrumentation {
public:
  void runAfterPass(const Pass&, const Graph&, const PassRunInfo& info) override {
    runs.push_back(info);
  }
  std::vector<PassRunInfo> runs;
};

struct Outcome {
  PassRunInfo info;
  bool anyGraphChanged = false;
};

Outcome runEdit(Graph& graph, Edit edit) {
  PipelineOptions options;
  RunLog log;
  Plan plan;
  PassContext ctx(options, log, plan);
  PassManager manager(PassManagerOptions{.verifyEach = false});
  manager.add(std::make_unique<EditPass>("edit", std::move(edit)));
  bool any = manager.run(graph, ctx);
  EXPECT_EQ(log.runs.size(), 1u);
  return {log.runs.at(0), any};
}

Node* nodeNamed(Graph& graph, const std::string& name) {
  for (Node* node : graph.nodes())
    if (node->numResults() && node->result()->name() == name) return node;
  if (Node* fused = nodeNamed(graph, "f"); fused && fused->hasBody())
    for (Node* node : fused->body()->nodes())
      if (node->result()->name() == name) return node;
  return nullptr;
}

TEST(PassManagerChange, APassThatDoesNothingIsUnchanged) {
  auto graph = parseGraph(kGraph);
  Outcome outcome = runEdit(*graph, [](Graph&, PassContext&) {});
  EXPECT_FALSE(outcome.info.graphChanged);
  EXPECT_FALSE(outcome.info.planChanged);
  EXPECT_FALSE(outcome.anyGraphChanged);
}

TEST(PassManagerChange, RewritingWhatIsAlreadyThereIsUnchanged) {
  auto graph = parseGraph(kGraph);
  Outcome outcome = runEdit(*graph, [](Graph& g, PassContext&) {
    Node* add = nodeNamed(g, "s");
    add->attrs().set("alpha", SymExpr(1));
    add->result()->setType(add->result()->type());
    add->setOperand(1, g.input(1));
  });
  EXPECT_FALSE(outcome.info.graphChanged);
}

TEST(PassManagerChange, EveryEditOfTheGraphIsAChange) {
  struct Case {
    const char* what;
    Edit edit;
  };
  std::vector<Case> cases = {
      {"an attribute",
       [](Graph& g, PassContext&) { nodeNamed(g, "s")->attrs().set("alpha", 2.0); }},
      {"an attribute added",
       [](Graph& g, PassContext&) { nodeNamed(g, "s")->attrs().set("kernel", "k0"); }},
      {"an attribute inside a fused body",
       [](Graph& g, PassContext&) { nodeNamed(g, "1")->attrs().set("alpha", SymExpr(3)); }},
      {"an operand", [](Graph& g, PassContext&) { nodeNamed(g, "s")->setOperand(1, g.input(0)); }},
      {"a result type",
       [](Graph& g, PassContext&) {
         nodeNamed(g, "s")->result()->setType(TensorType{DType::F64, {4, 8}});
       }},
      {"a value name", [](Graph& g, PassContext&) { nodeNamed(g, "s")->result()->setName("t"); }},
      {"a source location",
       [](Graph& g, PassContext&) {
         nodeNamed(g, "s")->setLoc(SourceLoc{"model.py", 3, ""});
       }},
      {"the outputs", [](Graph& g, PassContext&) { g.setOutput(0, g.input(0)); }},
      {"a node erased",
       [](Graph& g, PassContext&) {
         g.setOutput(0, g.input(0));
         Node* add = nodeNamed(g, "s");
         Node* fused = nodeNamed(g, "f");
         fused->setOperand(0, g.input(0));
         g.eraseNode(add);
       }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    auto graph = parseGraph(kGraph);
    Outcome outcome = runEdit(*graph, c.edit);
    EXPECT_TRUE(outcome.info.graphChanged);
    EXPECT_FALSE(outcome.info.planChanged);
    EXPECT_TRUE(outcome.anyGraphChanged);
  }
}

TEST(PassManagerChange, FillingOnlyThePlanIsAPlanChange) {
  auto graph = parseGraph(kGraph);
  Outcome outcome = runEdit(*graph, [](Graph&, PassContext& ctx) {
    ctx.plan().memory.arenaBytes = 256;
    ctx.plan().kernels.push_back(KernelChoice{.name = "k0", .node = "s", .op = "aten.add.Tensor"});
  });
  EXPECT_FALSE(outcome.info.graphChanged);
  EXPECT_TRUE(outcome.info.planChanged);
  EXPECT_FALSE(outcome.anyGraphChanged);
}

TEST(PassManagerChange, EachPassIsComparedWithTheOneBefore) {
  auto graph = parseGraph(kGraph);
  PipelineOptions options;
  RunLog log;
  Plan plan;
  PassContext ctx(options, log, plan);
  PassManager manager(PassManagerOptions{.verifyEach = false});
  Edit rename = [](Graph& g, PassContext&) { g.setName("renamed"); };
  manager.add(std::make_unique<EditPass>("rename", rename));
  manager.add(std::make_unique<EditPass>("rename-again", rename));
  manager.run(*graph, ctx);
  ASSERT_EQ(log.runs.size(), 2u);
  EXPECT_TRUE(log.runs[0].graphChanged);
  EXPECT_FALSE(log.runs[1].graphChanged);
}

TEST(PassManagerChange, PrintAfterChangeSkipsPassesThatLeftTheGraphAlone) {
  auto graph = parseGraph(kGraph);
  PipelineOptions options;
  std::ostringstream printed;
  IRPrintingInstrumentation printer(IRPrintingOptions{.afterChange = true}, printed);
  Plan plan;
  PassContext ctx(options, printer, plan);
  PassManager manager(PassManagerOptions{.verifyEach = false});
  manager.add(std::make_unique<EditPass>(
      "plan-only", [](Graph&, PassContext& c) { c.plan().memory.arenaBytes = 64; }));
  manager.add(std::make_unique<EditPass>("nothing", [](Graph&, PassContext&) {}));
  manager.add(std::make_unique<EditPass>(
      "edit", [](Graph& g, PassContext&) { nodeNamed(g, "s")->attrs().set("alpha", 2.0); }));
  manager.run(*graph, ctx);
  EXPECT_EQ(printed.str().find("IR after plan-only"), std::string::npos);
  EXPECT_EQ(printed.str().find("IR after nothing"), std::string::npos);
  EXPECT_NE(printed.str().find("IR after edit"), std::string::npos);
}

TEST(Fingerprint, ACloneHasTheFingerprintOfItsOriginal) {
  auto graph = parseGraph(kGraph);
  EXPECT_EQ(graphFingerprint(*graph->clone()), graphFingerprint(*graph));
  auto other = parseGraph(kGraph);
  nodeNamed(*other, "0")->setOp("aten.sub.Tensor");
  EXPECT_NE(graphFingerprint(*other), graphFingerprint(*graph));
}

TEST(Fingerprint, PlansDifferInAnyKernelField) {
  Plan plan;
  plan.kernels.push_back(KernelChoice{.name = "k0", .node = "s", .source = "void k0() {}"});
  Plan other = plan;
  EXPECT_EQ(planFingerprint(other), planFingerprint(plan));
  other.kernels[0].source = "void k0() { }";
  EXPECT_NE(planFingerprint(other), planFingerprint(plan));
  other = plan;
  other.kernels[0].rejected.push_back({KernelKind::Library, "cpu", "no BLAS"});
  EXPECT_NE(planFingerprint(other), planFingerprint(plan));
}

} // namespace
} // namespace loupe
