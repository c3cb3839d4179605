// The KV cache: for every layer, keys and values of n_cells cache cells
// (f16: K [n_cells, n_embd_kv], V transposed [n_embd_kv, n_cells]; the other
// types: K and V as rows [n_cells, row bytes]), preallocated for the context size. Each
// cell records the position it holds and the set of sequences that share it,
// so several sequences live in one cache with their own positions.
//
// A window cache (window_cells > 0, llama.cpp's iSWA cache): the layers of
// limited reach (HParams::is_swa: a sliding window, or llama4's chunks) keep
// their K/V in a second, smaller set of cells (window()) that holds per
// sequence only the cells a future token can still see: before each batch,
// the cells of a batch sequence that its lowest position in the batch no
// longer sees (HParams::reach(): n_swa or more below it, or before its
// chunk) are dropped. The full cells keep the other layers. Every operation below acts on
// both sets; what a window cannot serve (a token that would see a dropped cell,
// a context shift) throws InvalidArgument saying so.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cpu/ops/rope.h"
#include "gguf/tensor_type.h"
#include "model/forward.h"
#include "model/hparams.h"
#include "runtime/recurrent_state.h"

namespace ferrite::runtime {

// Sequence ids are 0 .. kMaxSequences-1 (a cell's sequences are a bit set).
constexpr int kMaxSequences = 256;

// A set of sequence ids (bits of kMaxSequences / 64 words).
class SeqSet {
 public:
  static constexpr int kWords = kMaxSequences / 64;
  void add(int s) { w_[static_cast<size_t>(s) / 64] |= uint64_t{1} << (s % 64); }
  void remove(int s) { w_[static_cast<size_t>(s) / 64] &= ~(uint64_t{1} << (s % 64)); }
  bool has(int s) const { return (w_[static_cast<size_t>(s) / 64] >> (s % 64)) & 1u; }
  bool empty() const {
    for (uint64_t w : w_) {
      if (w != 0) return false;
    }
    return true;
  }
  void clear() { w_.fill(0); }
  static SeqSet only(int s) {
    SeqSet r;
    r.add(s);
    return r;
  }
  // Calls f(s) for each s in both this set and `other`, in increasing order.
  template <typename F>
  void for_each_common(const SeqSet& other, F&& f) const {
    for (int i = 0; i < kWords; ++i) {
      for (uint64_t bits = w_[static_cast<size_t>(i)] & other.w_[static_cast<size_t>(i)]; bits != 0; bits &= bits - 1) {
        f(i * 64 + std::countr_zero(bits));
      }
    }
  }

 private:
  std::array<uint64_t, kWords> w_{};
};

// The cache types, as the command line names them.
constexpr const char* kCacheTypeNames = "f16, f32, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl";

// A cache type from its name ("q4_0"); InvalidArgument naming `option` for
// anything else.
TensorType cache_type_from_name(const std::string& name, const std::string& option);

class KvCache {
 public:
  struct Cell {
    int32_t pos = -1;   // -1: free
    SeqSet seqs;        // the sequences that use this cell
    bool has(int seq) const { return seqs.has(seq); }
  };

  // Types: f16, or f32, bf16 (rows of K / V as written, bf16 rounded;
  // attention reads them as they are, cpu/attention/attention_rows.h), or q8_0, q4_0,
  // q4_1, q5_0, q5_1, iq4_nl (rows of K / V quantized when written, read
  // back as f16 by attention; needs n_embd_kv a multiple of 32;
  // model/kv_quant.h). Throws InvalidArgument for a
  // non-positive size or an unsupported type.
  // n_storage_layers: layers whose K/V this cache stores (the first ones; -1:
  // all). The others (offloaded to the GPU, which keeps its own cache) get
  // no memory here and null pointers in view(); the cells are still tracked.
  // window_cells > 0 and below n_cells, with layers of limited reach
  // (sliding-window or chunked): those layers get a window of window_cells cells (the offloaded ones too: the
  // GPU keeps their K/V in as many cells, which the window decides and
  // moves through set_window_mover).
  // A model with SSM layers (HParams::is_recurrent) keeps no K/V for them
  // but a recurrent state (recurrent()) for up to n_state_slots sequences at
  // once; its sequences then continue only at their next position, and
  // removals and copies that would split a state are refused
  // (InvalidArgument; kv_cache_recurrent.cpp).
  KvCache(const model::HParams& hp, int64_t n_cells, TensorType type_k = TensorType::F16,
          TensorType type_v = TensorType::F16, int64_t n_storage_layers = -1, int64_t window_cells = 0,
          int n_state_slots = 1);

  // Copies K/V of cells kept elsewhere (a GPU backend's): from[i] to to[i].
  using CellCopier = std::function<void(std::span<const int32_t> from, std::span<const int32_t> to)>;

  // The SSM layers' state, or null (no such layers).
  RecurrentState* recurrent() { return recurrent_.get(); }
  const RecurrentState* recurrent() const { return recurrent_.get(); }
  // State slots of the tokens of the last allocate() (empty without recurrent state).
  const std::vector<int32_t>& recurrent_slots() const { return recurrent_slots_; }

  // The window's cells (layers of limited reach), or null: those layers are stored here.
  KvCache* window() { return window_.get(); }
  const KvCache* window() const { return window_.get(); }
  // Whether this cache stores layer il (its memory is here).
  bool stores(int64_t il) const;
  // Whether its cells are layer il's, stored here or kept by another backend.
  bool keeps(int64_t il) const { return stores(il) || (il >= 0 && il < n_layer_ && offloaded_[static_cast<size_t>(il)]); }
  // Bytes of K/V memory this cache holds (its window's included).
  int64_t bytes() const;
  // What bytes() of a cache of n_cells (all layers stored here) would be,
  // with a window of window_cells for the layers of limited reach (0: none), without
  // allocating it (`ferrite info`).
  static int64_t planned_bytes(const model::HParams& hp, int64_t n_cells, TensorType type_k, TensorType type_v,
                               int64_t window_cells);
  // Layers kept by another backend: the cells move there too (the window's
  // before a pass, KvCache::allocate; both sets after a restore,
  // align_sequence) through mover(from, to) (window_mover for the window's),
  // cell from[i] to to[i] in list order (a cell moved to may be moved from
  // later in the list). Without a mover no cell of such a cache moves (the
  // tokens take free cells out of order: the same values, summed in another
  // order).
  void set_movers(CellCopier mover, CellCopier window_mover);
  // Slots of the window for the tokens of the last allocate() (empty without window).
  const std::vector<int32_t>& window_slots() const { return window_slots_; }
  // Whether a token of `seq` at position `pos` sees every cell it should
  // (false: the window dropped a cell within its reach; evaluate the
  // sequence again from its start, or keep the whole cache).
  bool can_continue(int seq, int32_t pos) const;

  int64_t size() const { return static_cast<int64_t>(cells_.size()); }
  TensorType type() const { return type_k_; }
  TensorType type_k() const { return type_k_; }
  TensorType type_v() const { return type_v_; }
  const Cell& cell(int64_t i) const { return cells_[static_cast<size_t>(i)]; }
  // Cells in use.
  int64_t used() const { return used_; }
  // One past the highest cell in use (attention scans [0, end())).
  int64_t end() const;

  // Claims a cell for each (seq, pos) and records them (in the window too:
  // window_slots()); throws InvalidArgument when the cache has too few free
  // cells or a token would see a cell the window dropped (nothing claimed;
  // cells no later token can see may have been dropped).
  // With sequence regions (the default) a token goes to the first free cell
  // after its sequence's highest cell, and a new sequence starts in the
  // middle of the largest free run, so that each sequence's cells stay close
  // together and attention reads only that span (Context::decode_pass).
  // Without: the first free cell.
  std::vector<int32_t> allocate(const int32_t* seq, const int32_t* pos, int64_t n);
  void set_sequence_regions(bool on) { regions_ = on; }
  // allocate() in these cells only, not the window's (restoring a saved
  // state, context_state.cpp, which then sets the window's own cells and
  // dropped position).
  std::vector<int32_t> allocate_cells(const int32_t* seq, const int32_t* pos, int64_t n);
  // Moves the cells of `seq` so that each position p sits at a cell of
  // offset p modulo kRegionAlign, as a sequence evaluated from position 0
  // at a region start has them (after a restore: the same summation lanes).
  void align_sequence(int seq);
  // A window: positions of `seq` up to `pos` count as dropped (-1: none).
  void set_dropped(int seq, int32_t pos) { dropped_.at(static_cast<size_t>(seq)) = pos; }
  // A window: how far back its layers see (HParams::reach); the drops follow it.
  const model::AttentionReach& reach() const { return reach_; }
  // With regions: a sequence that has no cells starts at the first free cell
  // from `cell` instead of in the largest free run (the server gives each
  // slot its own share of the cache, so that no sequence grows into
  // another's and each one's span stays its own length). With `length` > 0
  // the home is the region [cell, cell + length): the sequence's tokens go to
  // its free cells first (after a context shift freed cells inside it, the
  // next tokens fill those rather than a neighbour's). -1: no home.
  // Throws InvalidArgument for an id or cell out of range.
  void set_sequence_home(int seq, int64_t cell, int64_t length = 0);

  // Removes positions [p0, p1) of `seq` (p1 < 0: to the end; seq < 0: every sequence).
  void remove(int seq, int32_t p0, int32_t p1);
  // Window sizing, llama.cpp's rule for its SWA cache (llama-kv-cache-iswa.cpp,
  // 2025-2026; its chunked layers' too, with the chunk size for n_swa):
  // min(n_ctx, n_swa * n_seq + n_ubatch) rounded up to 256 cells.
  // n_swa: AttentionReach::span().
  static int64_t window_size(int64_t n_swa, int64_t n_seq, int64_t n_ubatch, int64_t n_ctx);
  // Makes `dst` share every cell of `src` (prompt reuse without recompute).
  void copy_sequence(int src, int dst);
  // Copies the cells of `src` at positions [p0, p1) into new cells of `dst`
  // at the same positions (allocated as allocate() places dst's tokens), K
  // and V of every layer stored here, and those kept elsewhere (a GPU
  // backend's) through `offloaded(src cells, dst cells)`. Unlike
  // copy_sequence the two stay independent (a shift of one leaves the
  // other). Returns the number of cells copied. Throws InvalidArgument when
  // dst already holds one of those positions, when the cache has too few
  // free cells, or with layers elsewhere and no `offloaded`. kv_cache_copy.cpp.
  // The window's cells of the range (those it still holds) are copied too,
  // its layers kept elsewhere through `offloaded_window`.
  int64_t copy_cells(int src, int dst, int32_t p0, int32_t p1, const CellCopier& offloaded = {},
                     const CellCopier& offloaded_window = {});
  void clear();
  // Highest position of `seq`, or -1 when it has none.
  int32_t max_pos(int seq) const;

  // Rotates the K rows of `cells` of layer `layer` held elsewhere (a GPU
  // backend's cache): calls rotate(row) on each row's bytes (the cache's K
  // type) and writes them back.
  using RowRotation = std::function<void(uint8_t* row)>;
  using KeyRotator = std::function<void(int64_t layer, std::span<const int32_t> cells, const RowRotation& rotate)>;

  // Adds `delta` to the positions in [p0, p1) of `seq` (p1 < 0: to the end;
  // seq < 0: every sequence) and rotates their cached keys by the RoPE angle
  // of `delta` with each layer's settings (layer_rope[il]; n_rot 0:
  // positions only). Cells whose position would become negative are removed.
  // Shared cells move for every sequence using them. Layers this cache does
  // not store go to `offloaded`. kv_cache_shift.cpp. A window cache refuses
  // (InvalidArgument): the cells a shifted window would see are gone.
  void shift(int seq, int32_t p0, int32_t p1, int32_t delta, std::span<const cpu::RopeConfig> layer_rope,
             const KeyRotator& offloaded = {});

  // Raw access for saving and restoring (context_state.cpp).
  int64_t n_layer() const { return n_layer_; }
  int64_t n_embd_kv() const { return n_embd_kv_; }
  int64_t head_dim() const { return head_dim_; }
  // f16 cache: K row of a cell [n_embd_kv], V transposed [n_embd_kv, n_cells].
  uint16_t* k_row(int64_t il, int64_t cell) {
    return k_[static_cast<size_t>(il)].data() + cell * n_embd_kv_;
  }
  uint16_t* vt(int64_t il) { return v_[static_cast<size_t>(il)].data(); }
  // Quantized, f32 or bf16 cache (any type but f16): bytes of a K / V row,
  // and the K / V row of a cell (V not transposed).
  int64_t k_row_bytes() const { return k_row_bytes_; }
  int64_t v_row_bytes() const { return v_row_bytes_; }
  uint8_t* k_quant_row(int64_t il, int64_t cell) { return kq_[static_cast<size_t>(il)].data() + cell * k_row_bytes_; }
  uint8_t* v_quant_row(int64_t il, int64_t cell) { return vq_[static_cast<size_t>(il)].data() + cell * v_row_bytes_; }

  // Where new sequences start: region boundaries are multiples of this.
  static constexpr int64_t kRegionAlign = 32;

  // The view of the cache a forward pass uses (layers only; the caller adds
  // slots, n_kv and masks).
  model::KvView view();

 private:
  struct WindowTag {};
  // A window: stores the layers of limited reach only and drops what they no
  // longer see. Those from n_stored on are kept elsewhere.
  KvCache(WindowTag, const model::HParams& hp, int64_t n_cells, TensorType type_k, TensorType type_v,
          int64_t n_stored);
  bool any_offloaded() const;
  void allocate_storage(const std::vector<bool>& stored);
  void validate(const int32_t* seq, const int32_t* pos, int64_t n) const;
  // kv_cache_recurrent.cpp: each sequence of the batch continues at its next
  // position, in order; a removal or copy of [p0, p1) covers all of a
  // sequence or none of it (InvalidArgument otherwise); states of sequences
  // left without cells are released.
  void check_recurrent_batch(const int32_t* seq, const int32_t* pos, int64_t n) const;
  void check_recurrent_range(int seq, int32_t p0, int32_t p1, const char* what) const;
  void release_empty_states();
  // Window: drops the cells no token of the batch can see, checks what the
  // batch needs is there, and moves a sequence's cells so that its tokens
  // follow them in order (kv_cache_window.cpp).
  void prepare_window(const int32_t* seq, const int32_t* pos, int64_t n);
  // offset >= 0: move the cells so that the first is at a cell of that
  // offset modulo kRegionAlign (when they are not already).
  void make_room(int seq, int64_t n_new, int64_t offset = -1);
  // Moves the window's cells of `seq` so that its lowest position there sits
  // at the offset modulo kRegionAlign of the same position's cell here (after
  // a copy, which starts a sequence wherever each set has room): attention
  // then sums the window's cells in these cells' order (kv_cache_window.cpp).
  void align_window(int seq);
  void move_cell(int64_t from, int64_t to);
  void rotate_key_row(uint8_t* row, TensorType type, const cpu::RopeConfig& cfg, const float* cos_t,
                      const float* sin_t, std::vector<float>& scratch) const;
  int64_t free_from(int64_t i) const;  // first free cell at or after i (wrapping)
  // The cell for the next token of `seq` whose highest cell is hint - 1 (-1: none).
  int64_t next_cell(int seq, int64_t hint) const;
  int64_t region_start() const;        // the first cell of a new sequence

  TensorType type_k_, type_v_;
  bool regions_ = true;
  std::array<int64_t, kMaxSequences> home_ = make_homes();  // set_sequence_home; -1: none
  std::array<int64_t, kMaxSequences> home_len_{};          // 0: the home is a start only
  static std::array<int64_t, kMaxSequences> make_homes() {
    std::array<int64_t, kMaxSequences> h{};
    h.fill(-1);
    return h;
  }
  int64_t n_layer_;
  int64_t n_embd_kv_;
  int64_t head_dim_;
  int64_t k_row_bytes_ = 0, v_row_bytes_ = 0;  // types other than f16: bytes of a row
  std::vector<Cell> cells_;
  int64_t used_ = 0;
  std::vector<std::vector<uint16_t>> k_, v_;  // f16: [n_layer][n_cells * n_embd_kv], V transposed
  std::vector<std::vector<uint8_t>> kq_, vq_;  // other types: [n_layer][n_cells * row bytes]
  std::vector<bool> offloaded_;                 // [n_layer] layers kept by another backend
  std::unique_ptr<KvCache> window_;             // the sliding-window layers' cells, or null
  CellCopier mover_;                            // moves its offloaded layers' cells (set_movers)
  std::unique_ptr<RecurrentState> recurrent_;   // the SSM layers' state, or null
  std::vector<int32_t> recurrent_slots_;
  std::vector<int32_t> window_slots_;
  model::AttentionReach reach_;                 // limited(): this is a window
  std::array<int32_t, kMaxSequences> dropped_ = make_dropped();  // window: highest dropped position per sequence
  // Window, during allocate(): per sequence the offset modulo kRegionAlign
  // a sequence without cells starts at (-1: any; next_cell).
  std::array<int8_t, kMaxSequences> lane_ = make_lanes();
  static std::array<int8_t, kMaxSequences> make_lanes() {
    std::array<int8_t, kMaxSequences> l{};
    l.fill(-1);
    return l;
  }
  static std::array<int32_t, kMaxSequences> make_dropped() {
    std::array<int32_t, kMaxSequences> d{};
    d.fill(-1);
    return d;
  }
};

}  // namespace ferrite::runtime
