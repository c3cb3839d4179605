#include "quant/kv_quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "core/error.h"
#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/quantize_ref.h"
#include "quant/type_traits.h"

namespace ferrite::quant {
namespace {

static_assert(quant::kQK == kKvQuantBlock);
constexpr int kHalf = quant::kQK / 2;

// Element j in the low nibble of qs[j], element j + 16 in the high nibble.
void pack_nibbles(const int* q, uint8_t* qs) {
  for (int j = 0; j < kHalf; ++j) qs[j] = static_cast<uint8_t>((q[j] & 0xF) | ((q[j + kHalf] & 0xF) << 4));
}

// Bit j of qh: the fifth bit of element j.
void pack_fifth_bits(const int* q, uint8_t* qh) {
  uint32_t bits = 0;
  for (int j = 0; j < quant::kQK; ++j) bits |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
  for (int b = 0; b < 4; ++b) qh[b] = static_cast<uint8_t>(bits >> (8 * b));
}

// Symmetric block x = d (q - offset), q in [0, 2 offset - 1]: d = m / -offset
// where m is the value of largest magnitude (so m itself maps to q = 0).
float symmetric_scale(const float* x, int offset, int* q) {
  float amax = 0.0f, m = 0.0f;
  for (int j = 0; j < quant::kQK; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      m = x[j];
    }
  }
  const float d = m / static_cast<float>(-offset);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  const int qmax = 2 * offset - 1;
  for (int j = 0; j < quant::kQK; ++j) {
    q[j] = std::min(qmax, static_cast<int>(static_cast<int8_t>(x[j] * id + static_cast<float>(offset) + 0.5f)));
  }
  return d;
}

// Affine block x = d q + min, q in [0, qmax].
void affine_scale(const float* x, int qmax, int* q, float* d_out, float* min_out) {
  float lo = x[0], hi = x[0];
  for (int j = 1; j < quant::kQK; ++j) {
    lo = std::min(lo, x[j]);
    hi = std::max(hi, x[j]);
  }
  const float d = (hi - lo) / static_cast<float>(qmax);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < quant::kQK; ++j) {
    q[j] = std::min(qmax, static_cast<int>(static_cast<int8_t>((x[j] - lo) * id + 0.5f)));
  }
  *d_out = d;
  *min_out = lo;
}

}  // namespace

bool kv_quant_supported(TensorType type) {
  switch (type) {
    case TensorType::Q8_0:
    case TensorType::Q4_0:
    case TensorType::Q4_1:
    case TensorType::Q5_0:
    case TensorType::Q5_1:
    case TensorType::IQ4_NL:
      return true;
    default:
      return false;
  }
}

bool kv_float_row(TensorType type) { return type == TensorType::F32 || type == TensorType::BF16; }

int64_t kv_quant_row_bytes(TensorType type, int64_t n) {
  const quant::TypeTraits& t = quant::type_traits(type);
  return n / t.block_size * static_cast<int64_t>(t.block_bytes);
}

void kv_quantize_row(TensorType type, const float* x, uint8_t* row, int64_t n) {
  int q[quant::kQK];
  const int64_t nb = n / quant::kQK;
  switch (type) {
    case TensorType::Q8_0:
      quant::ref::quantize_q8_0(x, row, n, nullptr);
      return;
    case TensorType::Q4_0: {
      auto* b = reinterpret_cast<quant::BlockQ4_0*>(row);
      for (int64_t i = 0; i < nb; ++i) {
        b[i].d = fp32_to_fp16(symmetric_scale(x + i * quant::kQK, 8, q));
        pack_nibbles(q, b[i].qs);
      }
      return;
    }
    case TensorType::Q5_0: {
      auto* b = reinterpret_cast<quant::BlockQ5_0*>(row);
      for (int64_t i = 0; i < nb; ++i) {
        b[i].d = fp32_to_fp16(symmetric_scale(x + i * quant::kQK, 16, q));
        pack_nibbles(q, b[i].qs);
        pack_fifth_bits(q, b[i].qh);
      }
      return;
    }
    case TensorType::Q4_1: {
      auto* b = reinterpret_cast<quant::BlockQ4_1*>(row);
      for (int64_t i = 0; i < nb; ++i) {
        float d, m;
        affine_scale(x + i * quant::kQK, 15, q, &d, &m);
        b[i].d = fp32_to_fp16(d);
        b[i].m = fp32_to_fp16(m);
        pack_nibbles(q, b[i].qs);
      }
      return;
    }
    case TensorType::Q5_1: {
      auto* b = reinterpret_cast<quant::BlockQ5_1*>(row);
      for (int64_t i = 0; i < nb; ++i) {
        float d, m;
        affine_scale(x + i * quant::kQK, 31, q, &d, &m);
        b[i].d = fp32_to_fp16(d);
        b[i].m = fp32_to_fp16(m);
        pack_nibbles(q, b[i].qs);
        pack_fifth_bits(q, b[i].qh);
      }
      return;
    }
    case TensorType::IQ4_NL:
      quant::type_traits(type).from_float(x, row, n, nullptr);
      return;
    case TensorType::F32:
      std::memcpy(row, x, static_cast<size_t>(n) * sizeof(float));
      return;
    case TensorType::BF16: {
      auto* h = reinterpret_cast<uint16_t*>(row);
      for (int64_t i = 0; i < n; ++i) h[i] = fp32_to_bf16(x[i]);
      return;
    }
    default:
      throw InvalidArgument("KV cache type " + tensor_type_name(type) + " is not a quantized cache type");
  }
}

void kv_row_to_f32(TensorType type, const uint8_t* row, int64_t n, float* out) {
  quant::type_traits(type).to_float(row, out, n);
}

void kv_row_to_f16(TensorType type, const uint8_t* row, int64_t n, uint16_t* out, int64_t stride, float* tmp) {
  kv_row_to_f32(type, row, n, tmp);
  for (int64_t i = 0; i < n; ++i) out[i * stride] = fp32_to_fp16(tmp[i]);
}

}  // namespace ferrite::quant
