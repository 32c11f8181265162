// A file descriptor that closes itself, and whole-file reads and writes through one: the
// kernel cache and the host-compiler build work on descriptors, not paths, so that what was
// checked is what is read (kernel_cache.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace loupe {

class FileDescriptor {
public:
  FileDescriptor() = default;
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(FileDescriptor&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  FileDescriptor& operator=(FileDescriptor&& other) noexcept {
    std::swap(fd_, other.fd_);
    return *this;
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor();

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }

private:
  int fd_ = -1;
};

// Everything from the descriptor's current offset to the end, or nullopt when reading fails or
// there are more than `limit` bytes.
std::optional<std::string> readAll(int fd, int64_t limit);

// Writes all of `bytes`; false (errno set) when that fails.
bool writeAll(int fd, std::string_view bytes);

} // namespace loupe
