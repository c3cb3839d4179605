// AVX-512 attention, bit for bit attention_generic(): every score, softmax
// and output element is summed in exactly the order dot_f16 (AVX-512) and
// softmax_exp use, only the loops are rearranged.
//
// A block is the heads of one GQA group for up to kBlockQueries / group
// consecutive tokens that read the same cell range. For each 16-cell tile of
// the range, K is converted and transposed once ([head_dim, 16], d-major), and
// each query's scores for the 16 cells come out in the 16 lanes:
//   dot_f16 (n % 16 == 0) keeps one 16-lane accumulator acc[l] = sum over i
//   (in order) of q[16i + l] * k[16i + l], then _mm512_reduce_add_ps, whose
//   tree is ((((0+8)+(4+12))+((2+10)+(6+14)))+(((1+9)+(5+13))+((3+11)+(7+15)))).
//   Here A_l (a vector over cells) = the same fused sums, and the same tree
//   is applied to the vectors A_0..A_15.
// P.V loads each 16-cell chunk of a V^T row once for several queries and
// keeps dot_f16's accumulators per (query, d): one for lengths that are a
// multiple of 16, else four over blocks of 64 plus the double tail.
// Tiles hidden from every query of the block are skipped; their scores are
// -inf and their probabilities exactly 0, which adds nothing to any sum.
#pragma GCC diagnostic ignored "-Wuninitialized"
#if defined(__GNUC__) && !defined(__clang__)  // a gcc-only warning group (clang warns on the name)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "cpu/attention/attention_avx512.h"
#include "cpu/attention/alibi.h"
#include "cpu/attention/attention_blocks.h"
#include "cpu/ops/tanh_f32.h"
#include "cpu/vec_ops.h"

namespace ferrite::cpu {
namespace {

constexpr int64_t kLanes = 16;
constexpr int64_t kStep = 4 * kLanes;  // dot_f16's block when n % 16 != 0
constexpr int64_t kBlockQueries = 32;  // queries per block (tokens x group heads)
constexpr int64_t kMaxBlockTokens = 16;
constexpr int kScoreQueries = 4;       // queries sharing each K tile load
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

inline __mmask16 lanes_mask(int64_t n) {
  return n >= kLanes ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << n) - 1u);
}
inline __m512 load_f16(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
inline __m512 load_f16_masked(const uint16_t* p, __mmask16 m) {
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
}
inline __m512 round_f16(__m512 x) { return _mm512_cvtph_ps(_mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT)); }

// In-register 16x16 transpose: r[c] lane d -> r[d] lane c.
inline void transpose16(__m512 r[kLanes]) {
  __m512 t[kLanes], u[kLanes];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  // u[4i + k], 128-bit lane j: rows 4i..4i+3 of column 4j + k.
  for (int i = 0; i < 4; ++i) {
    const __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 1]);
    const __m512d c = _mm512_castps_pd(t[4 * i + 2]), d = _mm512_castps_pd(t[4 * i + 3]);
    u[4 * i + 0] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
    u[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
    u[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
    u[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
  }
  for (int k = 0; k < 4; ++k) {
    const __m512 a = _mm512_shuffle_f32x4(u[k], u[4 + k], 0x88), b = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], 0x88);
    const __m512 c = _mm512_shuffle_f32x4(u[k], u[4 + k], 0xDD), d = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], 0xDD);
    r[k] = _mm512_shuffle_f32x4(a, b, 0x88);
    r[8 + k] = _mm512_shuffle_f32x4(a, b, 0xDD);
    r[4 + k] = _mm512_shuffle_f32x4(c, d, 0x88);
    r[12 + k] = _mm512_shuffle_f32x4(c, d, 0xDD);
  }
}

// kt[d * 16 + c] = K[cell c0 + c][d] for c < n (0 beyond). kt: [head_dim, 16]
void transpose_k_tile(const uint16_t* k, int64_t stride, int64_t n, int64_t head_dim, float* kt) {
  for (int64_t d0 = 0; d0 < head_dim; d0 += kLanes) {
    __m512 r[kLanes];
    for (int64_t c = 0; c < kLanes; ++c) r[c] = c < n ? load_f16(k + c * stride + d0) : _mm512_setzero_ps();
    transpose16(r);
    for (int64_t d = 0; d < kLanes; ++d) _mm512_storeu_ps(kt + (d0 + d) * kLanes, r[d]);
  }
}

// The K rows of a later tile: 16 strided rows, which the hardware
// prefetchers follow poorly (decode is bound by these loads otherwise).
constexpr int64_t kPrefetchTiles = 2;
constexpr int64_t kCacheLineHalves = 32;  // f16 values per 64-byte line

void prefetch_k_tile(const uint16_t* k, int64_t stride, int64_t n, int64_t head_dim) {
  for (int64_t c = 0; c < n; ++c) {
    for (int64_t d = 0; d < head_dim; d += kCacheLineHalves) {
      _mm_prefetch(reinterpret_cast<const char*>(k + c * stride + d), _MM_HINT_T0);
    }
  }
}

// Scores of QB queries for one tile: A_l = sum_i q[16i + l] * kt[16i + l]
// (fused, in i order), combined by the reduce_add tree.
template <int QB>
struct TileScores {
  const float* kt;
  const float* const* q;  // QB rows [head_dim], f16-rounded
  int64_t head_dim;

  inline void lane(int l, __m512* acc) const {
    for (int j = 0; j < QB; ++j) acc[j] = _mm512_setzero_ps();
    for (int64_t i = l; i < head_dim; i += kLanes) {
      const __m512 kv = _mm512_loadu_ps(kt + i * kLanes);
      for (int j = 0; j < QB; ++j) acc[j] = _mm512_fmadd_ps(_mm512_set1_ps(q[j][i]), kv, acc[j]);
    }
  }
  template <int L0, int Stride>
  inline void tree(__m512* acc) const {
    if constexpr (Stride == kLanes) {
      lane(L0, acc);
    } else {
      __m512 other[QB];
      tree<L0, Stride * 2>(acc);
      tree<L0 + Stride, Stride * 2>(other);
      for (int j = 0; j < QB; ++j) acc[j] = _mm512_add_ps(acc[j], other[j]);
    }
  }
};

template <int QB>
void tile_scores(const float* kt, const float* const* q, int64_t head_dim, __m512* out) {
  TileScores<QB>{kt, q, head_dim}.template tree<0, 1>(out);
}

void tile_scores_any(int qb, const float* kt, const float* const* q, int64_t head_dim, __m512* out) {
  switch (qb) {
    case 4:
      return tile_scores<4>(kt, q, head_dim, out);
    case 3:
      return tile_scores<3>(kt, q, head_dim, out);
    case 2:
      return tile_scores<2>(kt, q, head_dim, out);
    default:
      return tile_scores<1>(kt, q, head_dim, out);
  }
}

// Distance ahead along each V^T row that P.V prefetches (cells): several
// rows stream at once, which the hardware prefetchers follow poorly.
constexpr int64_t kPrefetchCells = 512;

// out[j][d] for QB queries and DB consecutive d of V^T (rows at vt, stride
// vs), over the cells [16 * c_lo, 16 * c_hi) of [0, len), in dot_f16's order.
// NA = 1: len % 16 == 0, one accumulator. NA = 4: four over the blocks of 64
// below np = len - len % 64, then the tail summed in double.
template <int NA, int QB, int DB>
void pv_block(const float* const* p, const uint16_t* vt, int64_t vs, int64_t len, int64_t c_lo, int64_t c_hi,
              float* const* out) {
  __m512 acc[NA][QB][DB];
  for (int a = 0; a < NA; ++a) {
    for (int j = 0; j < QB; ++j) {
      for (int e = 0; e < DB; ++e) acc[a][j][e] = _mm512_setzero_ps();
    }
  }
  const int64_t np = NA == 1 ? len : len - len % kStep;
  const int64_t c_end = std::min(c_hi, np / kLanes);
  const int64_t c_begin = NA == 1 ? c_lo : c_lo - c_lo % NA;
  for (int64_t c = c_begin; c < c_end; c += NA) {
    for (int a = 0; a < NA; ++a) {
      const int64_t i = (c + a) * kLanes;
      __m512 pv[QB];
      for (int j = 0; j < QB; ++j) pv[j] = _mm512_loadu_ps(p[j] + i);
      for (int e = 0; e < DB; ++e) {
        _mm_prefetch(reinterpret_cast<const char*>(vt + e * vs + i + kPrefetchCells), _MM_HINT_T0);
        const __m512 v = load_f16(vt + e * vs + i);
        for (int j = 0; j < QB; ++j) acc[a][j][e] = _mm512_fmadd_ps(pv[j], v, acc[a][j][e]);
      }
    }
  }
  for (int j = 0; j < QB; ++j) {
    for (int e = 0; e < DB; ++e) {
      if constexpr (NA == 1) {
        out[j][e] = _mm512_reduce_add_ps(acc[0][j][e]);
      } else {
        double sum = 0.0;
        if (np > 0) {
          sum = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(acc[0][j][e], acc[2][j][e]),
                                                   _mm512_add_ps(acc[1][j][e], acc[3][j][e])));
        }
        for (int64_t i = np; i < len; i += kLanes) {
          const int64_t left = std::min(kLanes, len - i);
          const __mmask16 m = lanes_mask(left);
          alignas(64) float prod[kLanes];
          _mm512_store_ps(prod, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, p[j] + i), load_f16_masked(vt + e * vs + i, m)));
          for (int64_t l = 0; l < left; ++l) sum += static_cast<double>(prod[l]);
        }
        out[j][e] = static_cast<float>(sum);
      }
    }
  }
}

template <int NA, int DB>
void pv_queries(int qb, const float* const* p, const uint16_t* vt, int64_t vs, int64_t len, int64_t c_lo,
                int64_t c_hi, float* const* out) {
  if constexpr (NA == 1) {
    switch (qb) {
      case 4:
        return pv_block<NA, 4, DB>(p, vt, vs, len, c_lo, c_hi, out);
      case 3:
        return pv_block<NA, 3, DB>(p, vt, vs, len, c_lo, c_hi, out);
      default:
        break;
    }
  }
  if (qb >= 2) return pv_block<NA, 2, DB>(p, vt, vs, len, c_lo, c_hi, out);
  pv_block<NA, 1, DB>(p, vt, vs, len, c_lo, c_hi, out);
}

// Largest query count per P.V call: 4 with one accumulator, 2 with four.
constexpr int kPvQueries1 = 4;
constexpr int kPvQueries4 = 2;
// d values per P.V call (head_dim % 16 == 0 is a multiple of both): the
// accumulators, NA * queries * dims, stay at 16 registers.
constexpr int kPvDims1 = 4;
constexpr int kPvDims4 = 2;

using Block = AttentionBlock;

class Worker {
 public:
  Worker(const AttentionArgs& a, const VecOps& ops, std::vector<float>& buf, std::vector<int32_t>& live)
      : a_(a), ops_(ops), group_(a.n_head / a.n_head_kv), hd_(a.head_dim), buf_(buf), live_(live),
        slopes_(static_cast<size_t>(group_), 1.0f) {}

  void run(const Block& b) {
    // The ALiBi slopes of the group's heads (1 without ALiBi).
    for (int64_t hh = 0; hh < group_; ++hh) {
      slopes_[static_cast<size_t>(hh)] = alibi_slope(b.g * group_ + hh, a_.n_head, a_.max_alibi_bias);
    }
    const TokenRange r = token_range(a_, b.t0);
    const int64_t nq = b.n_tok * group_;
    const int64_t n_tiles = (r.len + kLanes - 1) / kLanes;
    const int64_t row = n_tiles * kLanes;  // scores row stride
    const size_t need = static_cast<size_t>(nq * hd_ + hd_ * kLanes + nq * row);
    if (buf_.size() < need) buf_.resize(need);
    if (live_.size() < static_cast<size_t>(nq)) live_.resize(static_cast<size_t>(nq));
    float* q = buf_.data();            // [nq, head_dim]
    float* kt = q + nq * hd_;          // [head_dim, 16]
    float* scores = kt + hd_ * kLanes;  // [nq, row]
    // Query qi = tt * group + hh: token t0 + tt, head g * group + hh.
    for (int64_t qi = 0; qi < nq; ++qi) {
      const float* src = a_.q + ((b.t0 + qi / group_) * a_.n_head + b.g * group_ + qi % group_) * hd_;
      for (int64_t d = 0; d < hd_; d += kLanes) _mm512_storeu_ps(q + qi * hd_ + d, round_f16(_mm512_loadu_ps(src + d)));
    }
    const uint16_t* kbase = a_.k + r.begin * a_.kv_stride + b.g * hd_;
    for (int64_t tile = 0; tile < n_tiles; ++tile) {
      const int64_t c0 = tile * kLanes, n = std::min(kLanes, r.len - c0);
      int64_t n_live = 0;
      for (int64_t tt = 0; tt < b.n_tok; ++tt) {
        const float* mask = token_range(a_, b.t0 + tt).mask + c0;
        const __m512 m = _mm512_mask_loadu_ps(_mm512_set1_ps(kNegInf), lanes_mask(n), mask);
        const bool visible = _mm512_cmp_ps_mask(m, _mm512_set1_ps(kNegInf), _CMP_NEQ_UQ) != 0;
        for (int64_t hh = 0; hh < group_; ++hh) {
          const int64_t qi = tt * group_ + hh;
          if (visible) {
            live_[static_cast<size_t>(n_live++)] = static_cast<int32_t>(qi);
          } else {
            _mm512_storeu_ps(scores + qi * row + c0, _mm512_set1_ps(kNegInf));
          }
        }
      }
      if (n_live == 0) continue;
      if (tile + kPrefetchTiles < n_tiles) {
        const int64_t pc = c0 + kPrefetchTiles * kLanes;
        prefetch_k_tile(kbase + pc * a_.kv_stride, a_.kv_stride, std::min(kLanes, r.len - pc), hd_);
      }
      transpose_k_tile(kbase + c0 * a_.kv_stride, a_.kv_stride, n, hd_, kt);
      for (int64_t i = 0; i < n_live; i += kScoreQueries) {
        const int qb = static_cast<int>(std::min<int64_t>(kScoreQueries, n_live - i));
        const float* qs[kScoreQueries];
        for (int j = 0; j < qb; ++j) qs[j] = q + live_[static_cast<size_t>(i + j)] * hd_;
        __m512 s[kScoreQueries];
        tile_scores_any(qb, kt, qs, hd_, s);
        for (int j = 0; j < qb; ++j) {
          const int64_t qi = live_[static_cast<size_t>(i + j)];
          finish_scores(s[j], token_range(a_, b.t0 + qi / group_).mask + c0, n, slopes_[static_cast<size_t>(qi % group_)],
                        scores + qi * row + c0);
        }
      }
    }
    for (int64_t qi = 0; qi < nq; ++qi) {
      softmax_row(scores + qi * row, r.len, row, sink_of(a_, b.g * group_ + qi % group_));
    }
    output(b, r, scores, row, nq);
  }

 private:
  // slope * m rounded on its own, as the generic path rounds it: the empty
  // asm keeps the compiler from fusing it with the add that follows.
  static __m512 alibi_bias(float slope, __m512 m) {
    __m512 b = _mm512_mul_ps(_mm512_set1_ps(slope), m);
    asm("" : "+v"(b));
    return b;
  }

  // s * scale, soft-capped, plus slope * mask (hidden cells exactly -inf;
  // slope 1 without ALiBi, the mask then added as it is).
  void finish_scores(__m512 s, const float* mask, int64_t n, float slope, float* dst) const {
    s = _mm512_mul_ps(s, _mm512_set1_ps(a_.scale));
    if (a_.softcap > 0.0f) {
      alignas(64) float v[kLanes];
      _mm512_store_ps(v, s);
      for (int64_t c = 0; c < n; ++c) v[c] = tanh_f32(v[c] * (1.0f / a_.softcap)) * a_.softcap;
      s = _mm512_load_ps(v);
    }
    const __m512 m = _mm512_mask_loadu_ps(_mm512_set1_ps(kNegInf), lanes_mask(n), mask);
    const __mmask16 hidden = _mm512_cmp_ps_mask(m, _mm512_set1_ps(kNegInf), _CMP_EQ_OQ);
    _mm512_storeu_ps(dst, _mm512_mask_blend_ps(hidden, _mm512_add_ps(s, alibi_bias(slope, m)), _mm512_set1_ps(kNegInf)));
  }

  // softmax_inplace then the f16 rounding of p, as attention_generic() does:
  // the same groups of 16 through softmax_exp, the remainder through expf,
  // the sum in the same double order. Whole groups of -inf add exactly 0.
  // sink: the head's attention sink (-inf: none, which adds exactly 0).
  void softmax_row(float* x, int64_t len, int64_t row, float sink) const {
    __m512 vmax = _mm512_set1_ps(kNegInf);
    for (int64_t i = 0; i < len; i += kLanes) {
      vmax = _mm512_mask_max_ps(vmax, lanes_mask(len - i), _mm512_loadu_ps(x + i), vmax);
    }
    const float max = std::max(sink, _mm512_reduce_max_ps(vmax));
    if (max == kNegInf) {
      for (int64_t i = 0; i < row; i += kLanes) _mm512_storeu_ps(x + i, _mm512_setzero_ps());
      return;
    }
    const int64_t fast = len - len % kExpGroup;
    double sum = 0.0;
    for (int64_t i = 0; i < fast; i += kLanes) {
      if (_mm512_cmp_ps_mask(_mm512_loadu_ps(x + i), _mm512_set1_ps(kNegInf), _CMP_EQ_OQ) == 0xFFFF) {
        _mm512_storeu_ps(x + i, _mm512_setzero_ps());
        continue;
      }
      sum += ops_.softmax_exp(x + i, kLanes, max);
    }
    for (int64_t i = fast; i < len; ++i) {
      x[i] = std::exp(x[i] - max);
      sum += x[i];
    }
    sum += static_cast<double>(std::exp(sink - max));
    const __m512 inv = _mm512_set1_ps(static_cast<float>(1.0 / sum));
    for (int64_t i = 0; i < row; i += kLanes) {
      const __mmask16 m = lanes_mask(len - i);
      _mm512_storeu_ps(x + i, _mm512_maskz_mov_ps(m, round_f16(_mm512_mul_ps(_mm512_loadu_ps(x + i), inv))));
    }
  }

  void output(const Block& b, const TokenRange& r, const float* p, int64_t row, int64_t nq) const {
    const bool one_acc = r.len % kLanes == 0;
    const int max_qb = one_acc ? kPvQueries1 : kPvQueries4;
    const int64_t n_chunks = row / kLanes;
    for (int64_t q0 = 0; q0 < nq; q0 += max_qb) {
      const int qb = static_cast<int>(std::min<int64_t>(max_qb, nq - q0));
      // Chunks holding a nonzero probability of any of these queries.
      int64_t c_lo = n_chunks, c_hi = 0;
      const float* ps[kPvQueries1];
      for (int j = 0; j < qb; ++j) {
        ps[j] = p + (q0 + j) * row;
        for (int64_t c = 0; c < n_chunks; ++c) {
          if (_mm512_test_epi32_mask(_mm512_castps_si512(_mm512_loadu_ps(ps[j] + c * kLanes)),
                                     _mm512_set1_epi32(-1)) != 0) {
            c_lo = std::min(c_lo, c);
            c_hi = std::max(c_hi, c + 1);
          }
        }
      }
      if (c_hi <= c_lo) c_lo = c_hi = 0;
      const int64_t step = one_acc ? kPvDims1 : kPvDims4;
      for (int64_t d = 0; d < hd_; d += step) {
        float res[kPvQueries1][kPvDims1];
        float* outs[kPvQueries1];
        for (int j = 0; j < qb; ++j) outs[j] = res[j];
        const uint16_t* vt = a_.vt + (b.g * hd_ + d) * a_.vt_stride + r.begin;
        if (one_acc) {
          pv_queries<1, kPvDims1>(qb, ps, vt, a_.vt_stride, r.len, c_lo, c_hi, outs);
        } else {
          pv_queries<4, kPvDims4>(qb, ps, vt, a_.vt_stride, r.len, c_lo, c_hi, outs);
        }
        for (int j = 0; j < qb; ++j) {
          const int64_t qi = q0 + j;
          float* dst = a_.out + ((b.t0 + qi / group_) * a_.n_head + b.g * group_ + qi % group_) * hd_ + d;
          for (int64_t e = 0; e < step; ++e) dst[e] = res[j][e];
        }
      }
    }
  }

  const AttentionArgs& a_;
  const VecOps& ops_;
  int64_t group_, hd_;
  std::vector<float>& buf_;
  std::vector<int32_t>& live_;
  std::vector<float> slopes_;  // [group_]
};

}  // namespace

bool attention_avx512_applies(const AttentionArgs& a) {
  return a.head_dim > 0 && a.head_dim % kLanes == 0 && a.n_head_kv > 0 && a.n_head % a.n_head_kv == 0;
}

void attention_avx512(const AttentionArgs& a, ThreadPool& pool, AttentionScratch& scratch) {
  run_attention_blocks<Worker>(a, pool, scratch, vec_ops(), kBlockQueries, kMaxBlockTokens);
}

}  // namespace ferrite::cpu
