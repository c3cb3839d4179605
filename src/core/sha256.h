// SHA-256 (FIPS 180-4), incremental. Used to check downloads and to compare
// dequantized tensors with the goldens.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace ferrite {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t n);
  // Finishes and returns the 32-byte digest; the object must not be updated after.
  std::array<uint8_t, 32> digest();
  // Finishes and returns the digest as 64 lower-case hex characters.
  std::string hex_digest();

  static std::string hex(const void* data, size_t n);

 private:
  void block(const uint8_t* p);
  std::array<uint32_t, 8> h_;
  std::array<uint8_t, 64> buf_{};
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

}  // namespace ferrite
