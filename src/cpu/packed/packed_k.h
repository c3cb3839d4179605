// Packed (16-row interleaved) layouts of Q4_K, Q5_K, Q6_K, IQ4_XS and IQ2_XXS weights and
// their products with Q8_K activations (packed.h describes the Q4_0/Q8_0 layouts).
//
// Group super-block b of 16 rows (16 * 144 bytes, the same bytes as the 16
// plain blocks in another order; the 6-bit scales re-encoded losslessly):
//   [  0,  32) 16 x f16 d
//   [ 32,  64) 16 x f16 dmin
//   [ 64, 192) for sb = 0..7, r = 0..15: sc[r][sb] | (m[r][sb] & 3) << 6
//   [192, 256) for sb = 0..7, i = 0..7: (m[i][sb] >> 2) | (m[i + 8][sb] >> 2) << 4
//   [256,2304) for j = 0..31, r = 0..15: qs[r][4j .. 4j+3]
// (qs byte l of pair p = sb / 2 holds element l of sub-block 2p in its low
// nibble and of 2p+1 in its high one, as in the plain block.)
//
// Product, per token and row, exactly the plain Q4_K . Q8_K dot:
//   sumi = sum_sb sc_sb * (sum_l q_l a_l),  summ = sum_sb m_sb * (bsums_2sb + bsums_2sb+1)
//   y += (d * d_a) * f32(sumi) - (dmin * d_a) * f32(summ)       (per super-block, in order)
#pragma once

#include <cstddef>
#include <cstdint>

#include "cpu/packed/packed_matmul.h"

namespace ferrite::cpu {

// Bytes of one group super-block (16 plain Q4_K blocks).
constexpr int64_t kPackedQ4KBlockBytes = 16 * 144;
constexpr int64_t kPackedQ4KDminOffset = 32;
constexpr int64_t kPackedQ4KScOffset = 64;
constexpr int64_t kPackedQ4KMhiOffset = 192;
constexpr int64_t kPackedQ4KQsOffset = 256;

// One group of 16 rows of n_blocks Q4_K blocks each (rows row_bytes apart).
void pack_q4_k_group(const uint8_t* plain, size_t row_bytes, int64_t n_blocks, uint8_t* packed);
void unpack_q4_k_group(const uint8_t* packed, size_t row_bytes, int64_t n_blocks, uint8_t* plain);

// Q5_K group super-block (16 * 176 bytes): the Q4_K layout above in
// [0, 2304), then [2304, 2816) for j = 0..7, r = 0..15: qh[r][4j .. 4j+3]
// (bit sb of qh byte l: the fifth bit, 16, of element l of sub-block sb).
// Product: the Q4_K one with the values plus their fifth bit.
constexpr int64_t kPackedQ5KBlockBytes = 16 * 176;
constexpr int64_t kPackedQ5KQhOffset = 2304;
void pack_q5_k_group(const uint8_t* plain, size_t row_bytes, int64_t n_blocks, uint8_t* packed);
void unpack_q5_k_group(const uint8_t* packed, size_t row_bytes, int64_t n_blocks, uint8_t* plain);
void packed_q5_k_ref(const uint8_t* group, const PackedActs& a, int64_t t0, int64_t nt, float* y, int64_t ys);
void packed_q5_k_avx512(const uint8_t* group, const PackedActs& a, int64_t t0, int64_t nt, float* y, int64_t ys);
void packed_q5_k_avx2(const uint8_t* group, const PackedActs& a, int64_t t0, int64_t nt, float* y, int64_t ys);

// Q6_K group super-block (16 * 210 bytes): [0,32) 16 x f16 d; [32,288) for
// sb = 0..15, r = 0..15: int8 scale; [288,2336) for j = 0..31, r: ql[r][4j..4j+3];
// [2336,3360) for j = 0..15, r: qh[r][4j..4j+3]. Product per super-block:
//   sumi = sum_sb sc_sb * (sum_l q_l a_l - 32 * bsums_sb),  y += (d * d_a) * f32(sumi)
constexpr int64_t kPackedQ6KBlockBytes = 16 * 210;
constexpr int64_t kPackedQ6KScOffset = 32;
constexpr int64_t kPackedQ6KQlOffset = 288;
constexpr int64_t kPackedQ6KQhOffset = 2336;
void pack_q6_k_group(const uint8_t* plain, size_t row_bytes, int64_t n_blocks, uint8_t* packed);
void unpack_q6_k_group(const uint8_t* packed, size_t row_bytes, int64_t n_blocks, uint8_t* plain);
void packed_q6_k_ref(const uint8_t* group, const PackedActs& a, int64_t t0, int64_t nt, float* y, int64_t ys);
void packed_q6_k_avx512(const uint8_t* group, const PackedActs& a, int64_t t0, int64_t nt, float* y, int64_t ys);
void packed_q6_k_avx2(const uint8_t* group, const PackedActs& a, int64_t t0, int64_t nt, float* y, int64_t ys);

// IQ4_XS group super-block (16 * 136 bytes): [0,32) 16 x f16 d; [32,64) 16 x
// u16 scales_h; [64,128) for i = 0..3, r = 0..15: scales_l[r][i]; [128,2176)
// for j = 0..31, r: qs[r][4j..4j+3]. Sub-block ib (32 values) of a row has
// the 6-bit scale ls = scales_l nibble ib | (2 bits ib of scales_h) << 4 and
// the values kIq4nlValues[nibble] of qs[16ib .. 16ib+15] (low nibbles: values
// 0..15, high: 16..31). Product per super-block, as llama.cpp's vec_dot:
//   sumi = sum_ib (ls_ib - 32) * (sum_l v_l a_l),  y += (d * d_a) * f32(sumi)
constexpr int64_t kPackedIq4XsBlockBytes = 16 * 136;
constexpr int64_t kPackedIq4XsScalesHOffset = 32;
constexpr int64_t kPackedIq4XsScalesLOffset = 64;
constexpr int64_t kPackedIq4XsQsOffset = 128;
void pack_iq4_xs_group(const uint8_t* plain, size_t row_bytes, int64_t n_blocks, uint8_t* packed);
void unpack_iq4_xs_group(const uint8_t* packed, size_t row_bytes, int64_t n_blocks, uint8_t* plain);
void packed_iq4_xs_ref(const uint8_t* group, const PackedActs& a, int64_t t0, int64_t nt, float* y, int64_t ys);
void packed_iq4_xs_avx512(const uint8_t* group, const PackedActs& a, int64_t t0, int64_t nt, float* y, int64_t ys);
void packed_iq4_xs_avx2(const uint8_t* group, const PackedActs& a, int64_t t0, int64_t nt, float* y, int64_t ys);

// IQ2_XXS group super-block (16 * 66 bytes): [0,32) 16 x f16 d; [32,544) for
// ib = 0..7, r = 0..15: the four grid indices of row r's sub-block ib (32
// values, 8 per index); [544,1056) for ib, r: four sign-and-scale bytes, byte
// l (values 8l..8l+7) = P(s_l) << 1 | bit l of the sub-block's 4-bit scale,
// where s_l is the plain block's 7-bit sign index and P its prefix parity
// (bit j = s_0 ^ ... ^ s_j). The eight sign bits come back as
// (b & 0xFE) ^ ((b & 0xFE) >> 1): s_0..s_6 and, as bit 7, their parity, which
// is IQ2_XXS's eighth sign. Product per super-block, as the plain dot:
//   sumi = sum_ib (2 scale_ib + 1) * (sum_l grid x sign x a),  y += (d * d_a) * f32(sumi);  y *= 1/8 at the end
constexpr int64_t kPackedIq2XxsBlockBytes = 16 * 66;
constexpr int64_t kPackedIq2XxsIndexOffset = 32;
constexpr int64_t kPackedIq2XxsSignOffset = 544;
void pack_iq2_xxs_group(const uint8_t* plain, size_t row_bytes, int64_t n_blocks, uint8_t* packed);
void unpack_iq2_xxs_group(const uint8_t* packed, size_t row_bytes, int64_t n_blocks, uint8_t* plain);
void packed_iq2_xxs_ref(const uint8_t* group, const PackedActs& a, int64_t t0, int64_t nt, float* y, int64_t ys);
void packed_iq2_xxs_avx2(const uint8_t* group, const PackedActs& a, int64_t t0, int64_t nt, float* y, int64_t ys);
void packed_iq2_xxs_avx512(const uint8_t* group, const PackedActs& a, int64_t t0, int64_t nt, float* y, int64_t ys);
// Many tokens (any nt; the matmul gives it tiles of 16): each super-block
// decoded once per call for all its tokens, bit-identical to the above.
void packed_iq2_xxs_wide_avx2(const uint8_t* group, const PackedActs& a, int64_t t0, int64_t nt, float* y, int64_t ys);

// Kernels for packed Q4_K with PackedActs whose q8 rows are Q8_K blocks
// (row_bytes per token, n_blocks = k / 256; d and sum unused).
void packed_q4_k_ref(const uint8_t* group, const PackedActs& a, int64_t t0, int64_t nt, float* y, int64_t ys);
void packed_q4_k_avx512(const uint8_t* group, const PackedActs& a, int64_t t0, int64_t nt, float* y, int64_t ys);
void packed_q4_k_avx2(const uint8_t* group, const PackedActs& a, int64_t t0, int64_t nt, float* y, int64_t ys);
// AMX tiles of 16 tokens (nt a multiple of kAmxTokens), bit-identical to the
// reference; x86 only: reach it through find_packed_kernel_amx(TensorType::Q4_K).
void packed_q4_k_amx(const uint8_t* group, const PackedActs& a, int64_t t0, int64_t nt, float* y, int64_t ys);

}  // namespace ferrite::cpu
