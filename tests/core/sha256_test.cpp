#include "core/sha256.h"

#include <string>

#include <gtest/gtest.h>

namespace {

// Test vectors from FIPS 180-4 / NIST examples.
TEST(Sha256, EmptyString) {
  EXPECT_EQ(ferrite::Sha256::hex("", 0), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256, Abc) {
  EXPECT_EQ(ferrite::Sha256::hex("abc", 3), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, TwoBlockMessage) {
  const std::string m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  EXPECT_EQ(ferrite::Sha256::hex(m.data(), m.size()),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, MillionAsInPieces) {
  ferrite::Sha256 h;
  const std::string chunk(1001, 'a');
  for (int i = 0; i < 1000; ++i) h.update(chunk.data(), i % 2 ? 999 : 1001);
  EXPECT_EQ(h.hex_digest(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

}  // namespace
