// What the AMX kernels (*_amx.cpp) share: the 64-byte operand of ldtilecfg
// (palette 1: rows and bytes per row of each of the eight tiles) and the
// width of a full tile row.
#pragma once

#include <cstdint>

namespace ferrite::cpu {

constexpr int kAmxTileBytes = 64;  // bytes of one tile row (16 int32/f32, 32 bf16, 64 int8)
constexpr int kAmxTileCount = 8;

struct alignas(64) AmxTileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};  // bytes per row of tile i (entries past kAmxTileCount stay 0)
  uint8_t rows[16] = {};
};
static_assert(sizeof(AmxTileConfig) == 64, "ldtilecfg reads 64 bytes");

}  // namespace ferrite::cpu
