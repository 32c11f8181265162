#include "gui/viewmodel/background_worker.h"

#include <algorithm>

#if defined(__linux__)
#include <sys/resource.h>
#include <unistd.h>
#endif

namespace loupe::view {

BackgroundWorker::BackgroundWorker() : thread_([this] { loop(); }) {}

BackgroundWorker::~BackgroundWorker() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

bool BackgroundWorker::Job::stale() const {
  return std::ranges::any_of(tickets, [](const auto& t) { return t.expired(); });
}

void BackgroundWorker::enqueue(std::vector<std::weak_ptr<const char>> tickets,
                               std::function<std::function<void()>()> run) {
  {
    std::lock_guard lock(mutex_);
    queue_.push_back({std::move(tickets), std::move(run), {}, false});
  }
  ++counts_.posted;
  wake_.notify_one();
}

void BackgroundWorker::loop() {
#if defined(__linux__)
  // Below the frame loop: when the cores are busy, a frame is drawn first and a layout
  // finishes a little later, not the other way round. (Linux keeps a nice value per thread;
  // the new thread starts with the UI thread's.)
  const auto self = static_cast<id_t>(gettid());
  setpriority(PRIO_PROCESS, self, getpriority(PRIO_PROCESS, self) + kNice);
#endif
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    Job job = std::move(queue_.front());
    queue_.pop_front();
    job.skipped = job.stale();
    if (!job.skipped) {
      running_ = true;
      lock.unlock();
      try {
        job.apply = job.run();
      } catch (...) {
        job.apply = [error = std::current_exception()] { std::rethrow_exception(error); };
      }
      lock.lock();
      running_ = false;
    }
    // Handed back whole, so that what the job holds is released on the UI thread.
    finished_.push_back(std::move(job));
    idle_.notify_all();
  }
}

int BackgroundWorker::applyFinished() {
  int applied = 0;
  for (;;) {
    Job job;
    {
      std::lock_guard lock(mutex_);
      if (finished_.empty()) return applied;
      job = std::move(finished_.front());
      finished_.pop_front();
    }
    if (job.skipped) {
      ++counts_.skipped;
    } else if (job.stale()) {
      ++counts_.dropped;
    } else {
      ++counts_.applied;
      ++applied;
      job.apply(); // may throw work's exception; the jobs after it stay for the next call
    }
  }
}

bool BackgroundWorker::busy() const {
  std::lock_guard lock(mutex_);
  return !queue_.empty() || running_ || !finished_.empty();
}

void BackgroundWorker::finishAll() {
  while (busy()) {
    {
      std::unique_lock lock(mutex_);
      idle_.wait(lock, [&] { return queue_.empty() && !running_; });
    }
    applyFinished();
  }
}

} // namespace loupe::view
