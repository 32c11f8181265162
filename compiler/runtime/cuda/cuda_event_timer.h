// Times GPU work on a stream with a pair of CUDA events: start() and stop() record them in stream
// order, milliseconds() waits for the stop event and returns the time between the two.
#pragma once

namespace loupe {

class CudaEventTimer {
public:
  // Creates the events in the current context (call cudaUseDevice first).
  CudaEventTimer();
  ~CudaEventTimer();
  CudaEventTimer(const CudaEventTimer&) = delete;
  CudaEventTimer& operator=(const CudaEventTimer&) = delete;

  void start(void* stream);
  void stop(void* stream);
  float milliseconds() const;

private:
  void* start_ = nullptr; // CUevent
  void* stop_ = nullptr;
};

} // namespace loupe
