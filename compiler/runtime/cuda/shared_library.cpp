#include "compiler/runtime/cuda/shared_library.h"

#include <dlfcn.h>

namespace loupe {

SharedLibrary openFirstSharedLibrary(const std::vector<std::string>& candidates) {
  SharedLibrary library;
  for (const std::string& candidate : candidates) {
    // RTLD_GLOBAL: a library loaded by full path may be needed by another one opened later by
    // soname (its dependents find it among the loaded objects).
    if (void* handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_GLOBAL)) {
      library.handle = handle;
      library.path = candidate;
      library.failure.clear();
      return library;
    }
    const char* error = dlerror();
    std::string why = error ? error : "not found";
    // dlerror's text usually starts with the name itself: say it once.
    if (why.starts_with(candidate + ": ")) why.erase(0, candidate.size() + 2);
    library.failure += std::string(library.failure.empty() ? "" : "; ") + candidate + ": " + why;
  }
  if (candidates.empty()) library.failure = "no candidate to try";
  return library;
}

void* sharedLibrarySymbol(const SharedLibrary& library, const char* symbol) {
  return library.handle ? dlsym(library.handle, symbol) : nullptr;
}

std::vector<std::string> splitSearchPath(std::string_view list) {
  std::vector<std::string> folders;
  while (!list.empty()) {
    size_t colon = list.find(':');
    std::string_view folder = list.substr(0, colon);
    if (!folder.empty()) folders.emplace_back(folder);
    if (colon == std::string_view::npos) break;
    list.remove_prefix(colon + 1);
  }
  return folders;
}

} // namespace loupe
