// Opening a shared library at run time from a list of candidates (a soname or a full path), so
// that Loupe builds and runs without the CUDA libraries and finds them where they are installed.
// Libraries opened here are never closed: their code may still be called from other libraries'
// exit handlers, and the driver keeps state that outlives any one user.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace loupe {

struct SharedLibrary {
  void* handle = nullptr; // dlopen's handle; null when no candidate opened
  std::string path;       // the candidate that opened
  std::string failure;    // when none opened: each candidate tried and why it did not open
};

// Tries the candidates in order (RTLD_NOW | RTLD_GLOBAL) and keeps the first that opens.
SharedLibrary openFirstSharedLibrary(const std::vector<std::string>& candidates);

// The address of `symbol` in the library, or null.
void* sharedLibrarySymbol(const SharedLibrary& library, const char* symbol);

// The folders of a colon-separated list (an environment variable's value), empty ones skipped.
std::vector<std::string> splitSearchPath(std::string_view list);

} // namespace loupe
