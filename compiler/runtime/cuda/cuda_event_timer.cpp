#include "compiler/runtime/cuda/cuda_event_timer.h"

#include "compiler/runtime/cuda/cuda_driver_api.h"

namespace loupe {

using namespace cu;

CudaEventTimer::CudaEventTimer() {
  CUevent start = nullptr, stop = nullptr;
  check(driver().cuEventCreate(&start, CU_EVENT_DEFAULT), "cuEventCreate", "the timer's start");
  if (CUresult result = driver().cuEventCreate(&stop, CU_EVENT_DEFAULT); result != CUDA_SUCCESS) {
    driver().cuEventDestroy(start);
    check(result, "cuEventCreate", "the timer's stop");
  }
  start_ = start;
  stop_ = stop;
}

CudaEventTimer::~CudaEventTimer() {
  driver().cuEventDestroy(static_cast<CUevent>(start_));
  driver().cuEventDestroy(static_cast<CUevent>(stop_));
}

void CudaEventTimer::start(void* stream) {
  check(driver().cuEventRecord(static_cast<CUevent>(start_), static_cast<CUstream>(stream)),
        "cuEventRecord", "the timer's start");
}

void CudaEventTimer::stop(void* stream) {
  check(driver().cuEventRecord(static_cast<CUevent>(stop_), static_cast<CUstream>(stream)),
        "cuEventRecord", "the timer's stop");
}

float CudaEventTimer::milliseconds() const {
  check(driver().cuEventSynchronize(static_cast<CUevent>(stop_)), "cuEventSynchronize",
        "the timer's stop");
  float elapsed = 0;
  check(driver().cuEventElapsedTime(&elapsed, static_cast<CUevent>(start_),
                                    static_cast<CUevent>(stop_)),
        "cuEventElapsedTime");
  return elapsed;
}

} // namespace loupe
