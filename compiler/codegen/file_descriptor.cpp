// Loops over read(2) and write(2), which may move fewer bytes than asked or be interrupted.
#include "compiler/codegen/file_descriptor.h"

#include <unistd.h>

#include <cerrno>

namespace loupe {

FileDescriptor::~FileDescriptor() {
  if (fd_ >= 0) close(fd_);
}

std::optional<std::string> readAll(int fd, int64_t limit) {
  std::string bytes;
  char buffer[1 << 16];
  for (;;) {
    ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) return bytes;
    bytes.append(buffer, static_cast<size_t>(n));
    if (static_cast<int64_t>(bytes.size()) > limit) return std::nullopt;
  }
}

bool writeAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

} // namespace loupe
