// AVX2 attention, bit for bit attention_generic() at the AVX2 level: every
// score, softmax and output element is summed in exactly the order the AVX2
// dot_f16 and softmax_exp use (which is the AVX-512 order, see vec_ops.h),
// only the loops are rearranged. The structure is attention_avx512.cpp's,
// with tiles of 8 cells (one 8-lane vector) instead of 16:
//   dot_f16 (n % 16 == 0) keeps a 16-lane accumulator acc[l] = sum over i
//   (in order) of q[16i + l] * k[16i + l] (two 8-lane halves), then reduces
//   it by the tree ((((0+8)+(4+12))+((2+10)+(6+14)))+(((1+9)+(5+13))+((3+11)+(7+15)))).
//   Here A_l (a vector over the tile's 8 cells) = the same fused sums, and
//   the same tree combines A_0..A_15.
// P.V keeps dot_f16's accumulators per (query, d) over the cells: one
// 16-lane accumulator for lengths that are a multiple of 16, else four over
// blocks of 64 plus the tail summed in double.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "cpu/attention/attention_avx2.h"
#include "cpu/attention/alibi.h"
#include "cpu/attention/attention_blocks.h"
#include "cpu/ops/tanh_f32.h"
#include "cpu/vec_ops.h"

namespace ferrite::cpu {
namespace {

constexpr int64_t kLanes = 8;       // cells per tile
constexpr int64_t kAcc = 16;        // lanes of dot_f16's accumulator
constexpr int64_t kStep = 4 * kAcc;  // dot_f16's block when n % 16 != 0
constexpr int64_t kBlockQueries = 32;  // queries per block (tokens x group heads)
constexpr int64_t kMaxBlockTokens = 16;
constexpr int kScoreQueries = 2;       // queries sharing each K tile load
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

inline __m256 load_f16(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
inline __m256 round_f16(__m256 x) { return _mm256_cvtph_ps(_mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT)); }

// Lane mask of the first n lanes (n <= 8) as a vector of all-ones / zeros.
inline __m256i lanes_mask(int64_t n) {
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(std::min<int64_t>(n, kLanes))), idx);
}
// Loads the first n lanes of p, `fill` in the others.
inline __m256 load_partial(const float* p, int64_t n, float fill) {
  if (n >= kLanes) return _mm256_loadu_ps(p);
  alignas(32) float v[kLanes];
  for (int64_t i = 0; i < kLanes; ++i) v[i] = i < n ? p[i] : fill;
  return _mm256_load_ps(v);
}

inline float reduce16(__m256 lo, __m256 hi) {
  const __m256 s = _mm256_add_ps(hi, lo);
  __m128 x = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
  x = _mm_add_ps(x, _mm_movehl_ps(x, x));
  x = _mm_add_ss(x, _mm_movehdup_ps(x));
  return _mm_cvtss_f32(x);
}

// In-register 8x8 transpose: r[c] lane d -> r[d] lane c.
inline void transpose8(__m256 r[kLanes]) {
  __m256 t[kLanes], u[kLanes];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 2; ++i) {
    u[4 * i + 0] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
    u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
    u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
    u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
  }
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm256_permute2f128_ps(u[i], u[4 + i], 0x20);
    r[4 + i] = _mm256_permute2f128_ps(u[i], u[4 + i], 0x31);
  }
}

// kt[d * 8 + c] = K[cell c][d] for c < n (0 beyond). kt: [head_dim, 8]
void transpose_k_tile(const uint16_t* k, int64_t stride, int64_t n, int64_t head_dim, float* kt) {
  for (int64_t d0 = 0; d0 < head_dim; d0 += kLanes) {
    __m256 r[kLanes];
    for (int64_t c = 0; c < kLanes; ++c) r[c] = c < n ? load_f16(k + c * stride + d0) : _mm256_setzero_ps();
    transpose8(r);
    for (int64_t d = 0; d < kLanes; ++d) _mm256_storeu_ps(kt + (d0 + d) * kLanes, r[d]);
  }
}

constexpr int64_t kPrefetchTiles = 4;
constexpr int64_t kCacheLineHalves = 32;

void prefetch_k_tile(const uint16_t* k, int64_t stride, int64_t n, int64_t head_dim) {
  for (int64_t c = 0; c < n; ++c) {
    for (int64_t d = 0; d < head_dim; d += kCacheLineHalves) {
      _mm_prefetch(reinterpret_cast<const char*>(k + c * stride + d), _MM_HINT_T0);
    }
  }
}

// Scores of QB queries for one tile: A_l = sum_i q[16i + l] * kt[16i + l]
// (fused, in i order), combined by the reduction tree.
template <int QB>
struct TileScores {
  const float* kt;
  const float* const* q;  // QB rows [head_dim], f16-rounded
  int64_t head_dim;

  inline void lane(int l, __m256* acc) const {
    for (int j = 0; j < QB; ++j) acc[j] = _mm256_setzero_ps();
    for (int64_t i = l; i < head_dim; i += kAcc) {
      const __m256 kv = _mm256_loadu_ps(kt + i * kLanes);
      for (int j = 0; j < QB; ++j) acc[j] = _mm256_fmadd_ps(_mm256_set1_ps(q[j][i]), kv, acc[j]);
    }
  }
  template <int L0, int Stride>
  inline void tree(__m256* acc) const {
    if constexpr (Stride == kAcc) {
      lane(L0, acc);
    } else {
      __m256 other[QB];
      tree<L0, Stride * 2>(acc);
      tree<L0 + Stride, Stride * 2>(other);
      for (int j = 0; j < QB; ++j) acc[j] = _mm256_add_ps(acc[j], other[j]);
    }
  }
};

void tile_scores(int qb, const float* kt, const float* const* q, int64_t head_dim, __m256* out) {
  if (qb == 2) return TileScores<2>{kt, q, head_dim}.template tree<0, 1>(out);
  TileScores<1>{kt, q, head_dim}.template tree<0, 1>(out);
}

// Distance ahead along each V^T row that P.V prefetches (cells).
constexpr int64_t kPrefetchCells = 512;

// A 16-lane accumulator as two halves.
struct Acc16 {
  __m256 lo, hi;
};

// out[j][e] for QB queries and DB consecutive d of V^T (rows at vt, stride
// vs), over the 16-cell chunks [c_lo, c_hi) of [0, len), in dot_f16's order.
// NA = 1: len % 16 == 0, one accumulator. NA = 4: four over the blocks of 64
// below np = len - len % 64, then the tail summed in double.
template <int NA, int QB, int DB>
void pv_block(const float* const* p, const uint16_t* vt, int64_t vs, int64_t len, int64_t c_lo, int64_t c_hi,
              float out[][4]) {
  Acc16 acc[NA][QB][DB];
  for (auto& a : acc) {
    for (auto& q : a) {
      for (auto& e : q) e.lo = e.hi = _mm256_setzero_ps();
    }
  }
  const int64_t np = NA == 1 ? len : len - len % kStep;
  const int64_t c_end = std::min(c_hi, np / kAcc);
  const int64_t c_begin = NA == 1 ? c_lo : c_lo - c_lo % NA;
  for (int64_t c = c_begin; c < c_end; c += NA) {
    for (int a = 0; a < NA; ++a) {
      const int64_t i = (c + a) * kAcc;
      for (int e = 0; e < DB; ++e) {
        _mm_prefetch(reinterpret_cast<const char*>(vt + e * vs + i + kPrefetchCells), _MM_HINT_T0);
        const __m256 v_lo = load_f16(vt + e * vs + i), v_hi = load_f16(vt + e * vs + i + kLanes);
        for (int j = 0; j < QB; ++j) {
          acc[a][j][e].lo = _mm256_fmadd_ps(_mm256_loadu_ps(p[j] + i), v_lo, acc[a][j][e].lo);
          acc[a][j][e].hi = _mm256_fmadd_ps(_mm256_loadu_ps(p[j] + i + kLanes), v_hi, acc[a][j][e].hi);
        }
      }
    }
  }
  for (int j = 0; j < QB; ++j) {
    for (int e = 0; e < DB; ++e) {
      if constexpr (NA == 1) {
        out[j][e] = reduce16(acc[0][j][e].lo, acc[0][j][e].hi);
      } else {
        double sum = 0.0;
        if (np > 0) {
          const Acc16& a0 = acc[0][j][e];
          const Acc16& a1 = acc[1][j][e];
          const Acc16& a2 = acc[2][j][e];
          const Acc16& a3 = acc[3][j][e];
          sum = reduce16(_mm256_add_ps(_mm256_add_ps(a0.lo, a2.lo), _mm256_add_ps(a1.lo, a3.lo)),
                         _mm256_add_ps(_mm256_add_ps(a0.hi, a2.hi), _mm256_add_ps(a1.hi, a3.hi)));
        }
        // The tail: exact f32 products (of f16 values) added in order in double.
        for (int64_t i = np; i < len; ++i) {
          const float prod = p[j][i] * _cvtsh_ss(vt[e * vs + i]);
          sum += static_cast<double>(prod);
        }
        out[j][e] = static_cast<float>(sum);
      }
    }
  }
}

// Largest query count per P.V call, and d values per call: the
// accumulators (NA x queries x dims x 2 halves) stay at 8 registers.
constexpr int kPvQueries1 = 2;
constexpr int kPvDims1 = 2;
constexpr int kPvQueries4 = 1;
constexpr int kPvDims4 = 1;

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
    // Score rows cover whole 16-groups (softmax_exp's) of cells.
    const int64_t row = (r.len + kAcc - 1) / kAcc * kAcc;
    const int64_t n_tiles = (r.len + kLanes - 1) / kLanes;
    const size_t need = static_cast<size_t>(nq * hd_ + hd_ * kLanes + nq * row);
    if (buf_.size() < need) buf_.resize(need);
    if (live_.size() < static_cast<size_t>(nq)) live_.resize(static_cast<size_t>(nq));
    float* q = buf_.data();             // [nq, head_dim]
    float* kt = q + nq * hd_;           // [head_dim, 8]
    float* scores = kt + hd_ * kLanes;  // [nq, row]
    // Query qi = tt * group + hh: token t0 + tt, head g * group + hh.
    for (int64_t qi = 0; qi < nq; ++qi) {
      const float* src = a_.q + ((b.t0 + qi / group_) * a_.n_head + b.g * group_ + qi % group_) * hd_;
      for (int64_t d = 0; d < hd_; d += kLanes) _mm256_storeu_ps(q + qi * hd_ + d, round_f16(_mm256_loadu_ps(src + d)));
    }
    for (int64_t qi = 0; qi < nq; ++qi) {
      for (int64_t c = n_tiles * kLanes; c < row; ++c) scores[qi * row + c] = kNegInf;
    }
    const uint16_t* kbase = a_.k + r.begin * a_.kv_stride + b.g * hd_;
    for (int64_t tile = 0; tile < n_tiles; ++tile) {
      const int64_t c0 = tile * kLanes, n = std::min(kLanes, r.len - c0);
      int64_t n_live = 0;
      for (int64_t tt = 0; tt < b.n_tok; ++tt) {
        const __m256 m = load_partial(token_range(a_, b.t0 + tt).mask + c0, n, kNegInf);
        const bool visible = _mm256_movemask_ps(_mm256_cmp_ps(m, _mm256_set1_ps(kNegInf), _CMP_NEQ_UQ)) != 0;
        for (int64_t hh = 0; hh < group_; ++hh) {
          const int64_t qi = tt * group_ + hh;
          if (visible) {
            live_[static_cast<size_t>(n_live++)] = static_cast<int32_t>(qi);
          } else {
            _mm256_storeu_ps(scores + qi * row + c0, _mm256_set1_ps(kNegInf));
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
        __m256 s[kScoreQueries];
        tile_scores(qb, kt, qs, hd_, s);
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
  static __m256 alibi_bias(float slope, __m256 m) {
    __m256 b = _mm256_mul_ps(_mm256_set1_ps(slope), m);
    asm("" : "+x"(b));
    return b;
  }

  // s * scale, soft-capped, plus slope * mask (hidden cells exactly -inf;
  // slope 1 without ALiBi, the mask then added as it is).
  void finish_scores(__m256 s, const float* mask, int64_t n, float slope, float* dst) const {
    s = _mm256_mul_ps(s, _mm256_set1_ps(a_.scale));
    if (a_.softcap > 0.0f) {
      alignas(32) float v[kLanes];
      _mm256_store_ps(v, s);
      for (int64_t c = 0; c < n; ++c) v[c] = tanh_f32(v[c] * (1.0f / a_.softcap)) * a_.softcap;
      s = _mm256_load_ps(v);
    }
    const __m256 m = load_partial(mask, n, kNegInf);
    const __m256 hidden = _mm256_cmp_ps(m, _mm256_set1_ps(kNegInf), _CMP_EQ_OQ);
    _mm256_storeu_ps(dst, _mm256_blendv_ps(_mm256_add_ps(s, alibi_bias(slope, m)), _mm256_set1_ps(kNegInf), hidden));
  }

  // softmax_inplace then the f16 rounding of p, as attention_generic() does:
  // the same groups of 16 through softmax_exp, the remainder through expf,
  // the sum in the same double order. Whole groups of -inf add exactly 0.
  // sink: the head's attention sink (-inf: none, which adds exactly 0).
  void softmax_row(float* x, int64_t len, int64_t row, float sink) const {
    __m256 vmax = _mm256_set1_ps(kNegInf);
    for (int64_t i = 0; i < len; i += kLanes) vmax = _mm256_max_ps(load_partial(x + i, len - i, kNegInf), vmax);
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(vmax), _mm256_extractf128_ps(vmax, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    const float max = std::max(sink, _mm_cvtss_f32(m4));
    if (max == kNegInf) {
      for (int64_t i = 0; i < row; i += kLanes) _mm256_storeu_ps(x + i, _mm256_setzero_ps());
      return;
    }
    const int64_t fast = len - len % kExpGroup;
    double sum = 0.0;
    const __m256 ninf = _mm256_set1_ps(kNegInf);
    for (int64_t i = 0; i < fast; i += kAcc) {
      const int all_lo = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i), ninf, _CMP_EQ_OQ));
      const int all_hi = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i + kLanes), ninf, _CMP_EQ_OQ));
      if (all_lo == 0xFF && all_hi == 0xFF) {
        _mm256_storeu_ps(x + i, _mm256_setzero_ps());
        _mm256_storeu_ps(x + i + kLanes, _mm256_setzero_ps());
        continue;
      }
      sum += ops_.softmax_exp(x + i, kAcc, max);
    }
    for (int64_t i = fast; i < len; ++i) {
      x[i] = std::exp(x[i] - max);
      sum += x[i];
    }
    sum += static_cast<double>(std::exp(sink - max));
    const __m256 inv = _mm256_set1_ps(static_cast<float>(1.0 / sum));
    for (int64_t i = 0; i < row; i += kLanes) {
      const __m256 keep = _mm256_castsi256_ps(lanes_mask(len - i));
      const __m256 v = i < len ? _mm256_loadu_ps(x + i) : _mm256_setzero_ps();
      _mm256_storeu_ps(x + i, _mm256_and_ps(keep, round_f16(_mm256_mul_ps(v, inv))));
    }
  }

  void output(const Block& b, const TokenRange& r, const float* p, int64_t row, int64_t nq) const {
    const bool one_acc = r.len % kAcc == 0;
    const int max_qb = one_acc ? kPvQueries1 : kPvQueries4;
    const int64_t n_chunks = row / kAcc;
    for (int64_t q0 = 0; q0 < nq; q0 += max_qb) {
      const int qb = static_cast<int>(std::min<int64_t>(max_qb, nq - q0));
      // Chunks holding a nonzero probability of any of these queries.
      int64_t c_lo = n_chunks, c_hi = 0;
      const float* ps[kPvQueries1];
      for (int j = 0; j < qb; ++j) {
        ps[j] = p + (q0 + j) * row;
        for (int64_t c = 0; c < n_chunks; ++c) {
          const __m256i v0 = _mm256_castps_si256(_mm256_loadu_ps(ps[j] + c * kAcc));
          const __m256i v1 = _mm256_castps_si256(_mm256_loadu_ps(ps[j] + c * kAcc + kLanes));
          if (!_mm256_testz_si256(_mm256_or_si256(v0, v1), _mm256_set1_epi32(-1))) {
            c_lo = std::min(c_lo, c);
            c_hi = std::max(c_hi, c + 1);
          }
        }
      }
      if (c_hi <= c_lo) c_lo = c_hi = 0;
      const int64_t step = one_acc ? kPvDims1 : kPvDims4;
      for (int64_t d = 0; d < hd_; d += step) {
        float res[kPvQueries1][4];
        const uint16_t* vt = a_.vt + (b.g * hd_ + d) * a_.vt_stride + r.begin;
        if (one_acc && qb == 2) {
          pv_block<1, 2, kPvDims1>(ps, vt, a_.vt_stride, r.len, c_lo, c_hi, res);
        } else if (one_acc) {
          pv_block<1, 1, kPvDims1>(ps, vt, a_.vt_stride, r.len, c_lo, c_hi, res);
        } else {
          pv_block<4, 1, kPvDims4>(ps, vt, a_.vt_stride, r.len, c_lo, c_hi, res);
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

bool attention_avx2_applies(const AttentionArgs& a) {
  return a.head_dim > 0 && a.head_dim % kAcc == 0 && a.n_head_kv > 0 && a.n_head % a.n_head_kv == 0;
}

void attention_avx2(const AttentionArgs& a, ThreadPool& pool, AttentionScratch& scratch) {
  run_attention_blocks<Worker>(a, pool, scratch, vec_ops_avx2(), kBlockQueries, kMaxBlockTokens);
}

}  // namespace ferrite::cpu
