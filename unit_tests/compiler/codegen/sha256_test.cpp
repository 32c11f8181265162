// SHA-256 against the test vectors of FIPS 180-2 (appendix B) and NIST's example values, fed
// whole and in pieces that straddle the 64-byte blocks.
#include <gtest/gtest.h>

#include <string>

#include "compiler/codegen/sha256.h"

namespace loupe::testing {
namespace {

TEST(Sha256, FipsOneBlockMessage) {
  EXPECT_EQ(sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, FipsTwoBlockMessage) {
  EXPECT_EQ(sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, FipsLongMessageOfAMillionAs) {
  EXPECT_EQ(sha256Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, EmptyMessage) {
  EXPECT_EQ(sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256, NistFourBlockMessage) {
  EXPECT_EQ(sha256Hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
                      "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu"),
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

TEST(Sha256, PiecesHashLikeTheWhole) {
  std::string message;
  for (int i = 0; i < 300; ++i)
    message += static_cast<char>(i * 7 + 1);
  for (size_t piece : {1, 3, 55, 56, 63, 64, 65, 128}) {
    Sha256 hash;
    for (size_t at = 0; at < message.size(); at += piece)
      hash.update(std::string_view(message).substr(at, piece));
    EXPECT_EQ(hash.hexDigest(), sha256Hex(message)) << "pieces of " << piece;
  }
  // Messages whose padding needs a block of its own (55, 56 and 64 bytes) and one that does not.
  EXPECT_EQ(sha256Hex(std::string(55, 'a')),
            "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
  EXPECT_EQ(sha256Hex(std::string(56, 'a')),
            "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
  EXPECT_EQ(sha256Hex(std::string(64, 'a')),
            "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
}

} // namespace
} // namespace loupe::testing
