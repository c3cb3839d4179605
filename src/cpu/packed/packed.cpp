#include "cpu/packed/packed.h"

#include <sys/mman.h>

#include <cstring>
#include <string>
#include <utility>

#include "core/error.h"
#include "cpu/packed/packed_k.h"
#include "cpu/packed/packed_legacy.h"
#include "quant/blocks.h"

namespace ferrite::cpu {
namespace {

using quant::BlockQ4_0;
using quant::BlockQ8_0;
using quant::kQK;

constexpr int64_t kLaneBytes = 4;      // bytes one int32 lane of the dot product consumes per row
constexpr uint8_t kQ8SignFlip = 0x80;  // int8 q -> uint8 q + 128
constexpr size_t kScaleBytes = sizeof(uint16_t);

// Bytes of quantized values per row and block for a packable type.
int64_t qs_bytes(TensorType t) { return t == TensorType::Q4_0 ? kQK / 2 : kQK; }
size_t block_bytes(TensorType t) { return t == TensorType::Q4_0 ? sizeof(BlockQ4_0) : sizeof(BlockQ8_0); }
uint8_t value_xor(TensorType t) { return t == TensorType::Q8_0 ? kQ8SignFlip : 0; }

// Plain block (row r of the group, block b) <-> packed group block.
template <bool kPack>
void convert_group(TensorType type, const uint8_t* plain_group, size_t row_bytes, int64_t n_blocks,
                   uint8_t* packed_group, const uint8_t* packed_src, uint8_t* plain_dst) {
  const size_t bb = block_bytes(type);
  const int64_t qb = qs_bytes(type);
  const uint8_t flip = value_xor(type);
  const size_t group_block = static_cast<size_t>(kPackRows) * bb;
  for (int64_t b = 0; b < n_blocks; ++b) {
    for (int64_t r = 0; r < kPackRows; ++r) {
      const size_t plain_off = static_cast<size_t>(r) * row_bytes + static_cast<size_t>(b) * bb;
      const size_t packed_block = static_cast<size_t>(b) * group_block;
      const size_t d_off = packed_block + static_cast<size_t>(r) * kScaleBytes;
      if constexpr (kPack) {
        std::memcpy(packed_group + d_off, plain_group + plain_off, kScaleBytes);
      } else {
        std::memcpy(plain_dst + plain_off, packed_src + d_off, kScaleBytes);
      }
      for (int64_t j = 0; j < qb / kLaneBytes; ++j) {
        const size_t p = packed_block + kPackRows * kScaleBytes + static_cast<size_t>((j * kPackRows + r) * kLaneBytes);
        const size_t q = plain_off + kScaleBytes + static_cast<size_t>(j * kLaneBytes);
        for (int64_t i = 0; i < kLaneBytes; ++i) {
          if constexpr (kPack) {
            packed_group[p + i] = static_cast<uint8_t>(plain_group[q + i] ^ flip);
          } else {
            plain_dst[q + i] = static_cast<uint8_t>(packed_src[p + i] ^ flip);
          }
        }
      }
    }
  }
}

bool is_float16(TensorType t) { return t == TensorType::F16 || t == TensorType::BF16; }

// F16/BF16: lane j of row r holds elements 2j, 2j+1; no scales.
template <bool kPack>
void convert_float_group(const uint8_t* plain_group, size_t row_bytes, uint8_t* packed_group, const uint8_t* packed_src,
                         uint8_t* plain_dst) {
  const auto lanes = static_cast<int64_t>(row_bytes) / kLaneBytes;
  for (int64_t j = 0; j < lanes; ++j) {
    for (int64_t r = 0; r < kPackRows; ++r) {
      const size_t p = static_cast<size_t>((j * kPackRows + r) * kLaneBytes);
      const size_t q = static_cast<size_t>(r) * row_bytes + static_cast<size_t>(j * kLaneBytes);
      if constexpr (kPack) {
        std::memcpy(packed_group + p, plain_group + q, kLaneBytes);
      } else {
        std::memcpy(plain_dst + q, packed_src + p, kLaneBytes);
      }
    }
  }
}

// The layouts of 256-value super-blocks (packed_k.h): each type's plain
// block size and its group packer and unpacker.
struct SuperBlockLayout {
  TensorType type;
  size_t block_bytes;
  void (*pack)(const uint8_t* plain, size_t row_bytes, int64_t n_blocks, uint8_t* packed);
  void (*unpack)(const uint8_t* packed, size_t row_bytes, int64_t n_blocks, uint8_t* plain);
};

constexpr SuperBlockLayout kSuperBlockLayouts[] = {
    {TensorType::Q4_K, sizeof(quant::BlockQ4_K), pack_q4_k_group, unpack_q4_k_group},
    {TensorType::Q5_K, sizeof(quant::BlockQ5_K), pack_q5_k_group, unpack_q5_k_group},
    {TensorType::Q6_K, sizeof(quant::BlockQ6_K), pack_q6_k_group, unpack_q6_k_group},
    {TensorType::IQ4_XS, sizeof(quant::BlockIQ4_XS), pack_iq4_xs_group, unpack_iq4_xs_group},
    {TensorType::IQ2_XXS, sizeof(quant::BlockIQ2_XXS), pack_iq2_xxs_group, unpack_iq2_xxs_group},
};

const SuperBlockLayout* super_block_layout(TensorType t) {
  for (const SuperBlockLayout& l : kSuperBlockLayouts) {
    if (l.type == t) return &l;
  }
  return nullptr;
}

}  // namespace

bool packable(TensorType type) {
  return type == TensorType::Q4_0 || type == TensorType::Q8_0 || super_block_layout(type) != nullptr ||
         is_float16(type) || packed_legacy_type(type);
}

bool packable(const MatView& w) {
  if (!packable(w.type) || w.n <= 0 || w.n % kPackRows != 0 || w.k % kQK != 0) return false;
  if (is_float16(w.type)) return w.row_bytes == static_cast<uint64_t>(w.k) * 2;
  if (const SuperBlockLayout* l = super_block_layout(w.type)) {
    return w.k % quant::kQKK == 0 && w.row_bytes == static_cast<uint64_t>(w.k / quant::kQKK) * l->block_bytes;
  }
  if (packed_legacy_type(w.type)) {
    return w.row_bytes == static_cast<uint64_t>(w.k / kQK * packed_legacy_block_bytes(w.type) / kPackRows);
  }
  return w.row_bytes == static_cast<uint64_t>(w.k / kQK) * block_bytes(w.type);
}

void pack_rows(const MatView& w, uint8_t* dst) {
  if (!packable(w)) throw InvalidArgument("pack_rows: matrix of type " + tensor_type_name(w.type) + " is not packable");
  const size_t group_bytes = static_cast<size_t>(kPackRows) * w.row_bytes;
  for (int64_t g = 0; g < w.n / kPackRows; ++g) {
    if (is_float16(w.type)) {
      convert_float_group<true>(w.row(g * kPackRows), w.row_bytes, dst + g * group_bytes, nullptr, nullptr);
      continue;
    }
    if (const SuperBlockLayout* l = super_block_layout(w.type)) {
      l->pack(w.row(g * kPackRows), w.row_bytes, w.k / quant::kQKK, dst + g * group_bytes);
      continue;
    }
    if (packed_legacy_type(w.type)) {
      pack_legacy_group(w.type, w.row(g * kPackRows), w.row_bytes, w.k / kQK, dst + g * group_bytes);
      continue;
    }
    convert_group<true>(w.type, w.row(g * kPackRows), w.row_bytes, w.k / kQK, dst + g * group_bytes, nullptr,
                        nullptr);
  }
}

void unpack_rows(const MatView& w, const uint8_t* packed, uint8_t* dst) {
  if (!packable(w)) throw InvalidArgument("unpack_rows: matrix of type " + tensor_type_name(w.type) + " is not packable");
  const size_t group_bytes = static_cast<size_t>(kPackRows) * w.row_bytes;
  for (int64_t g = 0; g < w.n / kPackRows; ++g) {
    if (is_float16(w.type)) {
      convert_float_group<false>(nullptr, w.row_bytes, nullptr, packed + g * group_bytes, dst + g * group_bytes);
      continue;
    }
    if (const SuperBlockLayout* l = super_block_layout(w.type)) {
      l->unpack(packed + g * group_bytes, w.row_bytes, w.k / quant::kQKK, dst + g * group_bytes);
      continue;
    }
    if (packed_legacy_type(w.type)) {
      unpack_legacy_group(w.type, packed + g * group_bytes, w.row_bytes, w.k / kQK, dst + g * group_bytes);
      continue;
    }
    convert_group<false>(w.type, nullptr, w.row_bytes, w.k / kQK, nullptr, packed + g * group_bytes,
                         dst + g * group_bytes);
  }
}

PackedBuffer::PackedBuffer(size_t bytes) : size_(bytes) {
  if (bytes == 0) return;
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    size_ = 0;
    throw IoError("repacked weights", "cannot allocate " + std::to_string(bytes) + " bytes of memory");
  }
#ifdef MADV_HUGEPAGE
  ::madvise(p, bytes, MADV_HUGEPAGE);  // best effort
#endif
  data_ = static_cast<uint8_t*>(p);
}

PackedBuffer::~PackedBuffer() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

PackedBuffer::PackedBuffer(PackedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

PackedBuffer& PackedBuffer::operator=(PackedBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) ::munmap(data_, size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

}  // namespace ferrite::cpu
