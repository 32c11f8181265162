// CUDA errors as loupe::Error values of kind "cuda". A CUresult is described by its name and
// text (from the driver when it is loaded, else from a built-in table of names), and classified
// as sticky when the driver documents that the context is unusable afterwards (an illegal
// address, a failed launch, ...): every later call on that context fails the same way, so the
// message says to restart the process, and callers ask `isStickyCudaError` to stop retrying.
#pragma once

#include "compiler/ir/error.h"

#include <exception>
#include <string>
#include <string_view>

namespace loupe {

class CudaError : public Error {
public:
  // `result` is the CUresult (or cublasStatus_t) that failed; 0 when there is none (no driver).
  CudaError(std::string message, int result = 0, bool sticky = false);

  int result() const { return result_; }
  bool sticky() const { return sticky_; }

private:
  int result_;
  bool sticky_;
};

// The sentence a sticky error's message carries; `isStickyCudaError` also recognises it in an
// Error that lost its CudaError type (Error::withContext returns a plain Error).
inline constexpr std::string_view kCudaContextUnusable =
    "the CUDA context is no longer usable: restart the process";

// Whether the driver documents `result` as leaving the context unusable (cuda.h, CUDA 13.0).
bool isStickyCudaResult(int result);

// "CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered)". Asks the driver
// (cuGetErrorName / cuGetErrorString) when `askDriver` and it is loaded; otherwise the name comes
// from the built-in table, and a code missing from it reads "CUresult 12345".
std::string describeCudaResult(int result, bool askDriver = true);

// The error for a driver call that returned `result`: names the call, what it was doing (may be
// empty), the result, and says when the context is lost.
CudaError cudaCallError(int result, std::string_view call, std::string_view what);

// A CudaError with sticky(), or a "cuda" Error whose message says the context is lost.
bool isStickyCudaError(const std::exception& error);

} // namespace loupe
