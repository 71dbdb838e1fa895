// tests/core/sha256_test.cpp — SHA-256 against the FIPS 180-4 example vectors
// and hashlib values at the padding boundaries (55/56/63/64 bytes, ...).
#include "core/sha256.hpp"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace deltaproof {
namespace {

std::string sha256_of(std::string_view text) {
  return sha256_hex(std::as_bytes(std::span<const char>(text.data(), text.size())));
}

TEST(Sha256, EmptyMessage) {
  EXPECT_EQ(sha256_of(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256, Abc) {
  EXPECT_EQ(sha256_of("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, Nist448BitMessage) {
  EXPECT_EQ(sha256_of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, Nist896BitMessage) {
  EXPECT_EQ(
      sha256_of("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmn"
                "opqklmnopqrlmnopqrsmnopqrstnopqrstu"),
      "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

TEST(Sha256, OneMillionAs) {
  const std::string million_a(1'000'000, 'a');
  EXPECT_EQ(sha256_of(million_a),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// Lengths around the one-block / two-block padding boundary; expected values
// from Python's hashlib over bytes (7 * i + 3) mod 256.
TEST(Sha256, PaddingBoundaries) {
  const std::vector<std::pair<std::size_t, std::string>> cases = {
      {55, "e7313d333c272e639f790978283f9eb392e843d0f29b7016828bb1daa4aac70b"},
      {56, "4324d65f3c103567f5589c710bc08f8523f929a9272e3af36fc968e52abc6c27"},
      {63, "81c80242132f230c3bd41b3e63bbcff16107339549214a99614ff26664625055"},
      {64, "39e3d7b6b5d075d37d053ad89b24b41bef4f3c29760c84447cab3f3be1882241"},
      {65, "aacca6ff74fdbb296d165a45cecfa04e5127bc008770fbbdd48006f2d2fae95e"},
      {119, "9ce7368e4daf32341631b492e80359dc9f594b48453cd0dd5bf0b19279cc177e"},
      {120, "7836b787757e95e58b3ca5aec90b1b004e8deba1e50e9675af9cabf1a13a04b5"},
      {127, "a8d23e75d936f303d248888d9b165ee543f4cbafcad3c9dd2a79bd84faa11d07"},
      {128, "d2742f1f4ac6bb7ca2b239ee18402ba8b3f9f8e652d2a72973c2b9ba11c08cf6"},
  };
  for (const auto& [length, expected] : cases) {
    std::vector<std::byte> message(length);
    for (std::size_t i = 0; i < length; ++i) message[i] = static_cast<std::byte>((7 * i + 3) % 256);
    EXPECT_EQ(sha256_hex(message), expected) << "message length " << length;
  }
}

}  // namespace
}  // namespace deltaproof
