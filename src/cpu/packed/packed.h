// Weights repacked at load for the matrix products: rows interleaved in
// groups of kPackRows so that one 512-bit load holds the same 4 bytes of 16
// rows. A VNNI dot-product instruction then multiplies 16 rows by one
// broadcast group of 4 activation bytes, and its 16 int32 lanes are the 16
// rows' partial sums: no horizontal reduction, one pass over the weights for
// any number of tokens (see packed_matmul.h).
//
// Layout of a group of 16 rows, block by block (b = 0 .. k/32-1), the same
// bytes as the 16 plain rows in another order:
//   Q4_0: [16 x f16 d] then for j = 0..3, r = 0..15: qs[r][4j .. 4j+3]
//         (byte i holds element i in its low nibble, element i+16 in its high one)
//   Q8_0: [16 x f16 d] then for j = 0..7, r = 0..15: qs[r][4j .. 4j+3] + 128 (as unsigned)
//   F16, BF16 (whole rows, no blocks): for j = 0..k/2-1, r = 0..15: row r elements 2j, 2j+1
//         (one 64-byte line per pair of columns: a bf16 pair per lane for vdpbf16ps, an AMX B row)
//   Q4_K, Q5_K, Q6_K, IQ4_XS, IQ2_XXS (super-blocks of 256, row length a multiple of 256): see packed_k.h
// A packed matrix keeps the size of the plain one: group g starts at byte
// g * kPackRows * row_bytes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cpu/matmul.h"

namespace ferrite::cpu {

// Rows per interleaved group.
constexpr int64_t kPackRows = MatView::kPackGroupRows;

// True when matrices of `type` have a packed layout and `w`'s shape fits it
// (rows a multiple of kPackRows, row length a multiple of 32).
bool packable(TensorType type);
bool packable(const MatView& w);

// Writes the packed layout of w (packable) to dst (w.n * w.row_bytes bytes).
void pack_rows(const MatView& w, uint8_t* dst);

// The inverse: plain rows from a packed matrix (tests and tools).
void unpack_rows(const MatView& plain_shape, const uint8_t* packed, uint8_t* dst);

// Memory for packed weights: anonymous pages, transparent huge pages
// requested (the products stream these bytes once per token; fewer TLB
// misses). Move-only; freed on destruction.
class PackedBuffer {
 public:
  PackedBuffer() = default;
  // Throws IoError when the memory cannot be had.
  explicit PackedBuffer(size_t bytes);
  ~PackedBuffer();
  PackedBuffer(PackedBuffer&& other) noexcept;
  PackedBuffer& operator=(PackedBuffer&& other) noexcept;
  PackedBuffer(const PackedBuffer&) = delete;
  PackedBuffer& operator=(const PackedBuffer&) = delete;

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace ferrite::cpu
