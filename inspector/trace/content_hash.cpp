#include "inspector/trace/content_hash.h"

#include <cstdint>
#include <cstdio>

namespace loupe {

std::string contentHash(std::string_view text) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (unsigned char byte : text) {
    hash ^= byte;
    hash *= 0x100000001b3ULL;
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  return hex;
}

} // namespace loupe
