// Lookup tables of the IQ types (facts of the format): the lattice grids the
// indices point into, the sign patterns and the IQ4 non-linear values.
// Grid entries hold one byte per element, element 0 in the lowest byte.
#pragma once

#include <array>
#include <cstdint>

namespace ferrite::quant {

constexpr int kIq2xxsGridSize = 256;
constexpr int kIq2xsGridSize = 512;
constexpr int kIq2sGridSize = 1024;
constexpr int kIq3xxsGridSize = 256;
constexpr int kIq3sGridSize = 512;
constexpr int kIq1sGridSize = 2048;

// Magnitudes 8, 25, 43 (IQ2_*: 8 elements per entry).
extern const std::array<uint64_t, kIq2xxsGridSize> kIq2xxsGrid;
extern const std::array<uint64_t, kIq2xsGridSize> kIq2xsGrid;
extern const std::array<uint64_t, kIq2sGridSize> kIq2sGrid;
// IQ3_XXS magnitudes 4..62, IQ3_S odd 1..15 (4 elements per entry).
extern const std::array<uint32_t, kIq3xxsGridSize> kIq3xxsGrid;
extern const std::array<uint32_t, kIq3sGridSize> kIq3sGrid;
// IQ1_S/IQ1_M: signed bytes -1, 0, 1 (8 elements per entry).
extern const std::array<uint64_t, kIq1sGridSize> kIq1sGrid;

// Offset added to every IQ1 grid value, its sign chosen per group.
constexpr float kIq1Delta = 0.125f;

// The 16 values of IQ4_NL / IQ4_XS.
constexpr std::array<int8_t, 16> kIq4nlValues = {-127, -104, -83, -65, -49, -35, -22, -10,
                                                 1,    13,   25,  38,  53,  69,  89,  113};

// Sign byte of a 7-bit sign index: the 8th sign makes the count of negative
// signs even (bit i set = element i negative).
constexpr uint8_t iq2_sign_byte(uint32_t index7) {
  uint32_t parity = 0;
  for (uint32_t v = index7; v != 0; v >>= 1) parity ^= v & 1u;
  return static_cast<uint8_t>(index7 | (parity << 7));
}

// Byte `j` of a grid entry.
inline uint8_t grid_byte(uint64_t entry, int j) { return static_cast<uint8_t>(entry >> (8 * j)); }

}  // namespace ferrite::quant
