// SHA-256 (FIPS 180-4), for the kernel cache: the digest that proves a cached library is the
// one Loupe built (docs/cpu-codegen.md, "Cache"). Small and dependency-free; speed is not a
// concern, the libraries it hashes are tens of kilobytes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace loupe {

class Sha256 {
public:
  Sha256();
  // Appends `bytes` to the message; may be called any number of times.
  Sha256& update(std::string_view bytes);
  // The digest of everything appended, as 64 lowercase hex digits. Ends the hash: call once.
  std::string hexDigest();

private:
  void compress(const unsigned char* block);

  std::array<uint32_t, 8> state_;
  std::array<unsigned char, 64> block_{};
  size_t blockSize_ = 0;
  uint64_t messageBytes_ = 0;
};

// The SHA-256 of `bytes`, as 64 lowercase hex digits.
std::string sha256Hex(std::string_view bytes);

} // namespace loupe
