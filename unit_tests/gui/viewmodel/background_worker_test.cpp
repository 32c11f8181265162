// The viewer's background worker: work runs on its thread, results are applied on the thread
// that polls, in order; stale jobs are skipped or their results dropped; an error in work
// surfaces where its result would have been applied.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <stdexcept>
#include <thread>
#include <vector>

#include "gui/viewmodel/background_worker.h"

#if defined(__linux__)
#include <sys/resource.h>
#include <unistd.h>
#endif

namespace loupe::view {
namespace {

// A job that waits for release() before it returns, so a test controls when work finishes.
class Gate {
public:
  void wait() const { opened_.wait(); }
  void release() { open_.set_value(); }

private:
  std::promise<void> open_;
  std::shared_future<void> opened_ = open_.get_future().share();
};

TEST(BackgroundWorker, RunsWorkOnItsThreadAndAppliesResultsOnThePollingThreadInOrder) {
  BackgroundWorker worker;
  JobTicket ticket;
  std::vector<int> applied;
  std::thread::id workThread, applyThread;
  for (int i = 0; i < 3; ++i)
    worker.post(
        ticket,
        [i, &workThread] {
          workThread = std::this_thread::get_id();
          return i * 10;
        },
        [&](int result) {
          applyThread = std::this_thread::get_id();
          applied.push_back(result);
        });
  worker.finishAll();
  EXPECT_EQ(applied, (std::vector<int>{0, 10, 20}));
  EXPECT_NE(workThread, std::this_thread::get_id());
  EXPECT_EQ(applyThread, std::this_thread::get_id());
  EXPECT_FALSE(worker.busy());
  EXPECT_EQ(worker.counts().applied, 3);
}

TEST(BackgroundWorker, NothingIsAppliedUntilPolled) {
  BackgroundWorker worker;
  JobTicket ticket;
  Gate gate;
  bool applied = false;
  worker.post(
      ticket, [&] { return gate.wait(), 1; }, [&](int) { applied = true; });
  EXPECT_TRUE(worker.busy());
  EXPECT_EQ(worker.applyFinished(), 0) << "polling never waits for running work";
  gate.release();
  worker.finishAll();
  EXPECT_TRUE(applied);
}

TEST(BackgroundWorker, AJobForAnOlderSelectionIsSkippedOrItsResultDropped) {
  BackgroundWorker worker;
  JobTicket selection;
  Gate started, gate;
  std::vector<std::string> applied;
  bool staleWorkRan = false;
  auto record = [&](std::string what) { applied.push_back(std::move(what)); };
  auto running = [&] {
    started.release();
    gate.wait();
    return std::string("running");
  };
  worker.post(selection, running, record);
  worker.post(
      selection, [&] { return staleWorkRan = true, std::string("queued"); }, record);
  started.wait();
  selection.renew(); // the user selected something else
  worker.post(
      selection, [] { return std::string("current"); }, record);
  gate.release();
  worker.finishAll();
  EXPECT_EQ(applied, std::vector<std::string>{"current"});
  EXPECT_FALSE(staleWorkRan) << "a job stale before it started is not run";
  EXPECT_EQ(worker.counts().dropped, 1);
  EXPECT_EQ(worker.counts().skipped, 1);
}

TEST(BackgroundWorker, JobsOfADestroyedOwnerNeverApply) {
  BackgroundWorker worker;
  Gate gate;
  bool applied = false;
  {
    JobTicket document;
    worker.post(
        document, [&] { return gate.wait(), 0; }, [&](int) { applied = true; });
  }
  gate.release();
  worker.finishAll();
  EXPECT_FALSE(applied);
}

TEST(BackgroundWorker, AnErrorInWorkIsRethrownWhereTheResultWouldBeApplied) {
  BackgroundWorker worker;
  JobTicket ticket;
  int after = 0;
  worker.post(
      ticket, []() -> int { throw std::runtime_error("dot failed"); }, [](int) {});
  worker.post(
      ticket, [] { return 7; }, [&](int v) { after = v; });
  EXPECT_THROW(worker.finishAll(), std::runtime_error);
  worker.finishAll();
  EXPECT_EQ(after, 7) << "the jobs after a failed one still apply";
}

TEST(BackgroundWorker, FinishAllRunsTheJobsThatAppliesPost) {
  BackgroundWorker worker;
  JobTicket ticket;
  int chain = 0;
  std::function<void(int)> next = [&](int depth) {
    chain = depth;
    if (depth < 3)
      worker.post(
          ticket, [depth] { return depth + 1; }, next);
  };
  worker.post(
      ticket, [] { return 1; }, next);
  worker.finishAll();
  EXPECT_EQ(chain, 3);
  EXPECT_FALSE(worker.busy());
}

TEST(BackgroundWorker, DestroyingItWithQueuedJobsRunsNoneOfThem) {
  Gate gate;
  bool queuedRan = false;
  std::thread releaser;
  {
    BackgroundWorker worker;
    JobTicket ticket;
    worker.post(
        ticket, [&] { return gate.wait(), 0; }, [](int) {});
    worker.post(
        ticket, [&] { return queuedRan = true, 0; }, [](int) {});
    // Released once the destructor is waiting (a generous margin: nothing to observe it by).
    releaser = std::thread([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      gate.release();
    });
  } // waits for the running job only
  releaser.join();
  EXPECT_FALSE(queuedRan);
}

#if defined(__linux__)
TEST(BackgroundWorker, RunsAtALowerPriorityThanTheThreadThatPosts) {
  BackgroundWorker worker;
  JobTicket ticket;
  int workerNice = 0;
  worker.post(
      ticket, [] { return getpriority(PRIO_PROCESS, static_cast<id_t>(gettid())); },
      [&](int nice) { workerNice = nice; });
  worker.finishAll();
  EXPECT_GT(workerNice, getpriority(PRIO_PROCESS, static_cast<id_t>(gettid())))
      << "a frame gets the CPU before a layout";
}
#endif

} // namespace
} // namespace loupe::view
