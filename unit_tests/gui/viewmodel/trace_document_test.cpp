// An open trace's loads go through the background worker: a getter gives nothing until the
// worker's result is applied, asks the worker once however often it is called, and a trace
// closed meanwhile gets none of its results.
#include <gtest/gtest.h>

#include <future>

#include "gui/viewmodel/trace_document.h"
#include "gui_test_support.h"
#include "inspector/trace/trace_writer.h"

namespace loupe::view {
namespace {

using testing::ScratchDir;

// One compile with two passes (two different snapshots), a kernel with a prelude, and the
// compile's calls replayed as CUDA graphs.
std::string writeTrace(const ScratchDir& dir) {
  const std::string path = dir.file("t.db");
  TraceWriter writer(path);
  const int64_t compile = writer.beginCompile(writer.beginRun({}), {.compile_key = "0/0"});
  int ordinal = 0;
  for (const char* lir : {testing::kSmallGraph, testing::kSmallGraphAfter}) {
    PassRecord pass;
    pass.info.name = "p" + std::to_string(ordinal);
    pass.info.ordinal = ordinal++;
    pass.snapshot = testing::snapshotOf(lir);
    writer.recordPass(compile, pass);
  }
  KernelRecord kernel;
  kernel.name = "k0";
  kernel.kind = "generated";
  kernel.target = "cpu";
  kernel.source = "#ifndef LOUPE_KERNEL_PRELUDE\n#endif\nvoid k0() {}\n";
  writer.recordKernel(compile, kernel);
  writer.recordCudaGraphStats(
      compile,
      {.chosen_by = "launch-planning", .captures = 1, .replays = 19, .uncaptured_calls = 1});
  writer.finishCompile(compile, {.wall_ms = 1});
  return path;
}

// Holds the worker: jobs posted after it wait until the future's promise is set.
std::promise<void> holdWorker(BackgroundWorker& worker, const JobTicket& ticket) {
  std::promise<void> gate;
  worker.post(
      ticket, [opened = gate.get_future().share()] { return opened.wait(), 0; }, [](int) {});
  return gate;
}

class TraceDocumentTest : public ::testing::Test {
protected:
  void SetUp() override {
    path_ = writeTrace(dir_);
    document_ = std::make_unique<TraceDocument>(openTrace(path_), path_, LayoutOptions{}, worker_);
  }
  int64_t snapshotOf(int pass) const {
    return *document_->tree().runs[0].frames[0].compiles[0].passes[pass].snapshotId;
  }

  ScratchDir dir_;
  std::string path_;
  BackgroundWorker worker_;
  JobTicket hold_;
  std::unique_ptr<TraceDocument> document_;
};

TEST_F(TraceDocumentTest, DetailsArriveFromTheWorkerAndAreReadOnce) {
  EXPECT_EQ(document_->details(1), nullptr);
  EXPECT_EQ(document_->details(1), nullptr);
  worker_.finishAll();
  const CompileDetails* details = document_->details(1);
  ASSERT_NE(details, nullptr);
  ASSERT_EQ(details->kernels.size(), 1u);
  ASSERT_EQ(details->kernelSources.size(), 1u);
  EXPECT_EQ(details->kernels[0].source.substr(details->kernelSources[0].bodyStart),
            "void k0() {}\n")
      << "coloured once, on the worker";
  EXPECT_EQ(worker_.counts().posted, 1) << "asked for twice, read once";
  EXPECT_TRUE(details->cudaGraphs.starts_with(
      "cuda graphs (launch-planning): 1 capture(s), 19 replay(s), 1 call(s) launched"))
      << details->cudaGraphs;
}

TEST_F(TraceDocumentTest, ASceneIsLoadingUntilTheWorkerHasLaidItOut) {
  std::promise<void> gate = holdWorker(worker_, hold_);
  const std::shared_ptr<SnapshotScene> scene = document_->scene(snapshotOf(0));
  EXPECT_TRUE(scene->loading());
  EXPECT_EQ(document_->scene(snapshotOf(0)), scene) << "one load, however often asked";
  gate.set_value();
  worker_.finishAll();
  ASSERT_TRUE(scene->ok()) << scene->error();
  EXPECT_FALSE(scene->scene().items.empty());
  EXPECT_EQ(document_->scene(snapshotOf(0)), scene) << "kept once built";
}

TEST_F(TraceDocumentTest, ASceneNoOneHoldsAnyMoreIsNotBuilt) {
  std::promise<void> gate = holdWorker(worker_, hold_);
  document_->scene(snapshotOf(0)); // asked for, then dropped (the user stepped on)
  const std::shared_ptr<SnapshotScene> kept = document_->scene(snapshotOf(1));
  gate.set_value();
  worker_.finishAll();
  EXPECT_EQ(worker_.counts().skipped, 1);
  EXPECT_TRUE(kept->ok());
}

TEST_F(TraceDocumentTest, AClosedDocumentGetsNoneOfItsResults) {
  std::promise<void> gate = holdWorker(worker_, hold_);
  const std::shared_ptr<SnapshotScene> scene = document_->scene(snapshotOf(0));
  document_->details(1);
  document_->graphBreaks(1);
  document_.reset();
  gate.set_value();
  worker_.finishAll();
  EXPECT_EQ(worker_.counts().skipped, 3);
  EXPECT_TRUE(scene->loading()) << "a scene still held by a canvas stays as it was";
}

} // namespace
} // namespace loupe::view
