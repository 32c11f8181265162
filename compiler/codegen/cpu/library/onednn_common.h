// What the oneDNN kernels (onednn_convolution.cpp, onednn_matmul.cpp) share: the CPU engine,
// primitives that take their workspace from the caller, the thread count a call runs on, and
// the cache of primitives made once per geometry. Included only where LOUPE_HAVE_ONEDNN builds
// oneDNN in.
#pragma once

#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <map>
#include <memory>
#include <mutex>

namespace loupe::library::onednn {

inline const dnnl::engine& cpuEngine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// The primitive's workspace is a Scratch (scratch.h), which the memory meter counts.
inline dnnl::primitive_attr userScratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

// oneDNN's parallel regions take the calling thread's OpenMP setting, which oneDNN also reads
// when it creates a primitive (plans are kept per thread count). A call runs on gemmThreads()
// threads, as a BLAS product does, and leaves the caller's setting as it was.
class ThreadScope {
public:
  explicit ThreadScope(int threads) : saved_(omp_get_max_threads()), threads_(threads) {
    if (threads_ != saved_) omp_set_num_threads(threads_);
  }
  ~ThreadScope() {
    if (threads_ != saved_) omp_set_num_threads(saved_);
  }
  ThreadScope(const ThreadScope&) = delete;
  ThreadScope& operator=(const ThreadScope&) = delete;

private:
  int saved_, threads_;
};

// Primitives are made once per geometry, layouts and thread count (creating one costs more than
// running a small one) and kept for the process; a full cache starts over.
template <typename Plan>
class PlanCache {
public:
  template <typename Make>
  std::shared_ptr<const Plan> get(const dnnl::memory::dims& key, Make make) {
    std::lock_guard lock(mutex_);
    auto found = plans_.find(key);
    if (found != plans_.end()) return found->second;
    if (plans_.size() >= kMaxPlans) plans_.clear();
    return plans_[key] = std::make_shared<const Plan>(make());
  }

private:
  static constexpr size_t kMaxPlans = 256;
  std::mutex mutex_;
  std::map<dnnl::memory::dims, std::shared_ptr<const Plan>> plans_;
};

} // namespace loupe::library::onednn
