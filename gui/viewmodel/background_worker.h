// One background thread for the viewer's slow work (reading the trace, parsing snapshots,
// Graphviz layout, differ runs), so that the frame loop never waits on it: Tracy's split of
// a Worker that loads and indexes from the views that only draw, and tinygrad's viz laying
// out graphs in a web worker.
//
// The UI thread posts a job: `work`, run on the worker thread, and `apply`, run with work's
// result on the UI thread when that next calls applyFinished() (once per frame). Work must
// not touch what the UI thread uses; apply may, since it runs there. Jobs run one at a time
// in the order posted, so no two jobs' work ever runs at once. The worker thread destroys
// nothing it was given: a job, its result and its apply are released on the UI thread.
//
// Every job is posted under tickets. A job one of whose tickets was renewed or destroyed
// before it started is skipped (never run); one whose ticket went while it ran has its result
// dropped. A selection renews its ticket when it changes, so results for an older selection
// never arrive; a document's ticket goes with the document, so nothing reaches a closed one;
// a scene's goes with the scene, so a graph no one shows any more is not laid out.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace loupe::view {

class JobTicket {
public:
  JobTicket() : token_(std::make_shared<char>()) {}
  // Every job posted under this ticket so far becomes stale.
  void renew() { token_ = std::make_shared<char>(); }

private:
  friend class BackgroundWorker;
  std::shared_ptr<const char> token_;
};

class BackgroundWorker {
public:
  // What became of the jobs posted so far (read on the UI thread; tests and the benchmark).
  struct Counts {
    int posted = 0, applied = 0;
    int skipped = 0; // stale before they started: never run
    int dropped = 0; // stale when they finished: run, result thrown away
  };

  BackgroundWorker();
  // Waits for the job running now (a Graphviz run cannot be interrupted); queued ones never run.
  ~BackgroundWorker();
  BackgroundWorker(const BackgroundWorker&) = delete;
  BackgroundWorker& operator=(const BackgroundWorker&) = delete;

  // Runs work() on the worker, then apply(result) on the UI thread. An exception thrown by
  // work is rethrown by the applyFinished() call that would have applied its result.
  template <typename Work, typename Apply>
  void post(const JobTicket& ticket, Work work, Apply apply) {
    post({std::cref(ticket)}, std::move(work), std::move(apply));
  }
  // The same, stale as soon as any of the tickets is.
  template <typename Work, typename Apply>
  void post(std::initializer_list<std::reference_wrapper<const JobTicket>> tickets, Work work,
            Apply apply) {
    using Result = std::invoke_result_t<Work&>;
    std::vector<std::weak_ptr<const char>> watched;
    for (const JobTicket& ticket : tickets)
      watched.push_back(ticket.token_);
    enqueue(std::move(watched), [work = std::move(work), apply = std::move(apply)]() mutable {
      auto result = std::make_shared<Result>(work());
      return std::function<void()>(
          [apply = std::move(apply), result] { apply(std::move(*result)); });
    });
  }

  // On the UI thread: applies the results of the jobs finished since the last call, in the
  // order posted, and returns how many were applied.
  int applyFinished();
  // A job is queued, running, or finished and not yet applied.
  bool busy() const;
  // Batch modes (--screenshot, --benchmark, tests): waits for every job and applies its
  // result, including the jobs those applies post, until there is nothing left to do.
  void finishAll();
  Counts counts() const { return counts_; }

private:
  struct Job {
    std::vector<std::weak_ptr<const char>> tickets;
    std::function<std::function<void()>()> run; // work, returning apply bound to its result
    std::function<void()> apply;                // set once run
    bool skipped = false;
    bool stale() const;
  };
  void enqueue(std::vector<std::weak_ptr<const char>> tickets,
               std::function<std::function<void()>()> run);
  void loop();

  static constexpr int kNice = 10; // added to the worker thread's nice value: below the UI's
  mutable std::mutex mutex_;
  std::condition_variable wake_; // a job was queued, or stop
  std::condition_variable idle_; // a job finished
  std::deque<Job> queue_, finished_;
  bool running_ = false, stopping_ = false;
  Counts counts_; // UI thread only
  std::thread thread_;
};

} // namespace loupe::view
