// Conversions between float32 and the 16-bit float formats stored in GGUF:
// IEEE half (F16) and bfloat16 (BF16). Exact, portable, no intrinsics.
#pragma once

#include <bit>
#include <cstdint>

namespace ferrite {

// IEEE binary16 -> binary32, exact for every input including subnormals,
// infinities and NaNs.
inline float fp16_to_fp32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t mant = h & 0x3FFu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      mant &= 0x3FFu;
      bits = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | (mant << 13);
    }
  } else if (exp == 0x1F) {
    bits = sign | 0x7F800000u | (mant << 13);
  } else {
    bits = sign | ((exp + (127 - 15)) << 23) | (mant << 13);
  }
  return std::bit_cast<float>(bits);
}

// binary32 -> binary16 with round-to-nearest-even (what F16C's
// vcvtps2ph with imm 0 does), overflow to infinity, NaN kept quiet.
inline uint16_t fp32_to_fp16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t absx = x & 0x7FFFFFFFu;
  if (absx > 0x7F800000u) {  // NaN
    return static_cast<uint16_t>(sign | 0x7E00u | ((absx >> 13) & 0x3FFu));
  }
  if (absx >= 0x477FF000u) {  // rounds to >= 65520: infinity
    return static_cast<uint16_t>(sign | 0x7C00u);
  }
  if (absx < 0x38800000u) {  // result is subnormal or zero
    // value = absx as float; half subnormal unit is 2^-24.
    const float a = std::bit_cast<float>(absx);
    // Adding 0.5 (2^-1) places the 2^-24 unit at the last mantissa bit,
    // so the FPU performs the round-to-nearest-even for us.
    const float shifted = a + 0.5f;
    const uint32_t r = std::bit_cast<uint32_t>(shifted) - 0x3F000000u;
    return static_cast<uint16_t>(sign | r);
  }
  // Normal: rebias exponent, round mantissa from 23 to 10 bits (nearest even).
  const uint32_t mant_odd = (absx >> 13) & 1u;
  uint32_t v = absx + 0xC8000FFFu + mant_odd;  // rebias (-112 << 23) and round
  return static_cast<uint16_t>(sign | (v >> 13));
}

// bfloat16 -> float32: the top half of the float's bits.
inline float bf16_to_fp32(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

// float32 -> bfloat16 with round-to-nearest-even; NaN kept a quiet NaN.
inline uint16_t fp32_to_bf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) {
    return static_cast<uint16_t>((x >> 16) | 0x40u);
  }
  return static_cast<uint16_t>((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

}  // namespace ferrite
