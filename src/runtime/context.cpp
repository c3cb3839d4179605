#include "runtime/context.h"

#include <algorithm>
#include <array>
#include <bit>
#include <limits>
#include <string>

#include "core/error.h"
#include "cpu/backend/cpu_backend.h"
#include "cpu/features.h"
#include "runtime/offload.h"

namespace ferrite::runtime {
namespace {

int64_t context_size(const model::HParams& hp, int64_t requested) {
  if (requested < 0) throw InvalidArgument("context size must not be negative");
  if (requested > 0) return requested;
  return hp.n_ctx_train > 0 ? std::min(hp.n_ctx_train, kDefaultMaxCtx) : kDefaultMaxCtx;
}

int thread_count(int requested) {
  if (requested < 0) throw InvalidArgument("thread count must not be negative");
  return requested == 0 ? cpu::ThreadPool::default_threads() : requested;
}

// Layers whose K/V the CPU cache stores: all without offload; the CPU's
// first layers with a partial one (the GPU takes the last n_gpu_layers and
// keeps their cache itself); none when every layer is on the GPU.
int64_t cpu_cache_layers(const model::HParams& hp, int n_gpu_layers) {
  if (n_gpu_layers == 0) return -1;
  if (n_gpu_layers < 0) return 0;
  return std::max<int64_t>(0, hp.n_layer - n_gpu_layers);
}

constexpr float kHidden = -std::numeric_limits<float>::infinity();

// The cells each token of the pass reads in `cache`: its sequence's span,
// widened to kKvPad boundaries (one sequence alone at the start of the
// cache reads [0, n_kv) as without ranges).
void cell_ranges(const KvCache& cache, const Batch& batch, int64_t begin, int64_t n, int64_t n_kv,
                 std::vector<int32_t>& kv_begin, std::vector<int32_t>& kv_len);

// Mask rows [n, width] over each token's cells (cell_ranges): a cell is
// visible to a token of sequence s at position p when it belongs to s and
// holds a position <= p, and in mask_reach also one p still sees
// (reach.sees: within the sliding window, or in p's chunk).
// Visible is 0, or with ALiBi -(p - cell position). Either mask may be null.
void fill_masks(const KvCache& cache, const Batch& batch, int64_t begin, int64_t n,
                const std::vector<int32_t>& kv_begin, const std::vector<int32_t>& kv_len, int64_t width, bool alibi,
                std::vector<float>* mask, const model::AttentionReach& reach, std::vector<float>* mask_reach);

// Attention scans a multiple of this many cells (the extra ones are masked):
// whole vectors for the dot products over cells, and llama.cpp's padding, so
// that sums run in the same order.
constexpr int64_t kKvPad = 32;

}  // namespace

int64_t window_cells(const model::HParams& hp, const ContextParams& p) {
  if (p.swa_full || !hp.has_swa_layers()) return 0;
  if (p.n_seq_max < 1) throw InvalidArgument("n_seq_max must be positive");
  const int64_t n_ctx = context_size(hp, p.n_ctx);
  const int64_t w = KvCache::window_size(hp.reach().span(), p.n_seq_max, p.n_batch, n_ctx);
  return w < n_ctx ? w : 0;
}

CachePlan cache_plan(const model::HParams& hp, const ContextParams& p) {
  CachePlan plan;
  plan.n_cells = context_size(hp, p.n_ctx);
  plan.window_cells = window_cells(hp, p);
  plan.bytes = KvCache::planned_bytes(hp, plan.n_cells, p.cache_type, p.cache_type_v, plan.window_cells);
  return plan;
}

Context::Context(std::shared_ptr<const model::Model> model, const ContextParams& params)
    : model_(std::move(model)),
      params_(params),
      cache_(model_->hparams(), context_size(model_->hparams(), params.n_ctx), params.cache_type,
             params.cache_type_v, cpu_cache_layers(model_->hparams(), params.n_gpu_layers),
             window_cells(model_->hparams(), params), params.n_seq_max),
      pool_(thread_count(params.n_threads)),
      cpu_(std::make_unique<cpu::CpuBackend>(model_->dims(), pool_, ws_)) {
  cpu::apply_isa_env();
  if (params_.n_batch <= 0) throw InvalidArgument("batch size must be positive");
  for (const auto& a : params_.lora) {
    if (a == nullptr || &a->model() != model_.get()) {
      throw InvalidArgument("a LoRA adapter of the context was loaded for another model");
    }
  }
  lora_.set_adapters(params_.lora, params_.lora_scales);
  if (params_.n_gpu_layers != 0) {
    // The GPU keeps its layers' cache in the same types (or refuses the types it has not).
    // Its sliding (or chunked) layers keep the window's cells; its cells move as the runtime's do.
    KvCache* win = cache_.window();
    Offload off = make_offload(*model_, cache_.size(), params_.n_gpu_layers, params_.cache_type,
                               params_.cache_type_v, params_.switches, win != nullptr ? win->size() : 0);
    gpu_ = std::move(off.backend);
    cache_.set_movers(
        [this](std::span<const int32_t> from, std::span<const int32_t> to) { gpu_->copy_cached_cells(from, to); },
        [this](std::span<const int32_t> from, std::span<const int32_t> to) { gpu_->copy_window_cells(from, to); });
    placement_ = std::make_unique<model::Placement>(*cpu_, *gpu_, off.first_layer);
    warm_up();
  } else {
    placement_ = std::make_unique<model::Placement>(*cpu_);
  }
  if (params_.embeddings) set_embeddings(true);
}

void Context::warm_up() {
  // One step of token 0 at position 0 into cell 0, which the cache keeps
  // free (it is written again before any step reads it; until then masks
  // hide it): the GPU backend uploads each weight at its first use, so this
  // happens now and not inside the first request, and a problem shows here.
  const int32_t token = 0, pos = 0, seq = 0, row = 0, slot = 0;
  model::ForwardBatch fb{&token, &pos, 1, &row, 1, &seq};
  if (model_->arch().is_encoder()) {
    std::vector<float> states(static_cast<size_t>(model_->hparams().n_embd));
    model::run_step(model_->arch(), *placement_, fb, model::KvView{}, states.data());
    return;
  }
  std::vector<float> enc;
  if (model_->arch().has_encoder()) {
    // The encoder's pass too, and its state row as the decoder's input.
    enc.resize(static_cast<size_t>(model_->hparams().n_embd));
    model::ForwardBatch eb = fb;
    eb.encode = true;
    model::run_step(model_->arch(), *placement_, eb, model::KvView{}, enc.data());
    fb.enc = enc.data();
    fb.enc_seq = &seq;
    fb.n_enc = 1;
  }
  model::KvView kv = cache_.view();
  kv.slots = &slot;
  kv.n_kv = std::min(cache_.size(), kKvPad);
  std::vector<float> mask(static_cast<size_t>(kv.n_kv), kHidden), logits(static_cast<size_t>(n_vocab()));
  mask[0] = 0.0f;
  kv.mask = mask.data();
  kv.mask_swa = model_->hparams().n_swa > 0 ? mask.data() : nullptr;
  kv.mask_chunk = model_->hparams().n_chunk > 0 ? mask.data() : nullptr;  // position 0 sees its cell in any chunking
  // A window cache: the sliding (or chunked) layers' step into the window's
  // cell 0 (free likewise).
  model::KvView window;
  if (cache_.window() != nullptr) {
    window = cache_.window()->view();
    window.slots = &slot;
    window.n_kv = std::min(cache_.window()->size(), kKvPad);
    window.mask = mask.data();
    window.mask_swa = mask.data();
    window.mask_chunk = mask.data();
    kv.swa = &window;
  }
  // SSM layers run on state slot 0, which a sequence zeroes when it takes it.
  model::RecurrentView states;
  if (cache_.recurrent() != nullptr) {
    states = cache_.recurrent()->view();
    states.slot = &slot;
    kv.rs = &states;
  }
  model::run_step(model_->arch(), *placement_, fb, kv, logits.data());
}

const char* Context::backend_name() const { return (gpu_ ? gpu_ : cpu_)->name(); }

void Context::set_matmul_observer(backend::MatmulObserver* observer) {
  if (observer != nullptr && gpu_) throw InvalidArgument("observing the weight products needs a CPU-only context");
  ws_.observer = observer;
}

std::span<const float> Context::logits(int64_t i) const {
  if (embeddings_) throw InvalidArgument("the context is in embeddings mode: it keeps hidden states, not logits");
  if (i < 0 || i >= n_out_) throw InvalidArgument("no logits for output " + std::to_string(i));
  const int64_t nv = n_vocab();
  return {logits_.data() + i * nv, static_cast<size_t>(nv)};
}

void Context::decode(const Batch& batch) {
  const int64_t n = batch.size();
  if (static_cast<int64_t>(batch.pos.size()) != n || static_cast<int64_t>(batch.seq.size()) != n ||
      static_cast<int64_t>(batch.want_logits.size()) != n ||
      (!batch.types.empty() && static_cast<int64_t>(batch.types.size()) != n)) {
    throw InvalidArgument("batch fields have different lengths");
  }
  check_token_types(batch);
  const int64_t nv = n_vocab();
  for (int64_t i = 0; i < n; ++i) {
    if (batch.tokens[i] < 0 || batch.tokens[i] >= nv) {
      throw InvalidArgument("token id " + std::to_string(batch.tokens[i]) + " is outside the vocabulary (0.." +
                            std::to_string(nv - 1) + ")");
    }
  }
  if (model_->arch().is_encoder()) {
    encode(batch);
    return;
  }
  if (has_encoder()) {
    model::ForwardBatch check;  // every sequence of the batch has its encoder output (or throws)
    attach_encoder_output(batch, 0, n, check);
  }
  int64_t total_out = 0;
  for (int64_t i = 0; i < n; ++i) total_out += is_output(batch, i) ? 1 : 0;
  const int64_t row = embeddings_ ? model_->hparams().n_embd : nv;
  (embeddings_ ? states_ : logits_).resize(static_cast<size_t>(total_out * row));
  n_out_ = 0;
  for (int64_t begin = 0; begin < n; begin += params_.n_batch) {
    decode_pass(batch, begin, std::min(n, begin + params_.n_batch));
  }
  if (embeddings_) pool_sequences(batch);
}

void Context::decode_pass(const Batch& batch, int64_t begin, int64_t end) {
  const model::HParams& hp = model_->hparams();
  const int64_t n = end - begin;
  std::vector<int32_t> slots = cache_.allocate(batch.seq.data() + begin, batch.pos.data() + begin, n);

  const int64_t n_kv = std::min(cache_.size(), (cache_.end() + kKvPad - 1) / kKvPad * kKvPad);
  token_ranges(batch, begin, n, n_kv);
  const int64_t width = *std::max_element(kv_len_.begin(), kv_len_.end());

  // Masks [n, width], row t over cells [kv_begin_[t], + kv_len_[t]): a cell is
  // visible to a token of sequence s at position p when it belongs to s and
  // holds a position <= p (and, for sliding-window layers, one within the window).
  // ALiBi models see -|p - cell pos| there instead of 0 (backend::AttentionSpec):
  // the distance of the cell's current position, so a context shift moves
  // the bias with the positions and rotates nothing.
  // T5's relative position bias reads the same distances (AttentionSpec::rel_bias).
  const bool alibi = hp.max_alibi_bias > 0.0f || hp.n_rel_buckets > 0;
  // With a window cache the layers of limited reach (sliding or chunked)
  // read its cells (window_view) and these cells serve the others only.
  const model::AttentionReach reach = hp.reach();
  const bool reach_here = reach.limited() && cache_.window() == nullptr;
  fill_masks(cache_, batch, begin, n, kv_begin_, kv_len_, width, alibi, &mask_, reach,
             reach_here ? &mask_reach_ : nullptr);

  std::vector<int32_t> out_rows;
  for (int64_t t = 0; t < n; ++t) {
    if (is_output(batch, begin + t)) out_rows.push_back(static_cast<int32_t>(t));
  }

  model::ForwardBatch fb;
  fb.tokens = batch.tokens.data() + begin;
  fb.pos = batch.pos.data() + begin;
  fb.n_tokens = n;
  fb.out_rows = out_rows.data();
  fb.n_out = static_cast<int64_t>(out_rows.size());
  fb.lora = lora_.step(batch.seq.data() + begin, n, out_rows.data(), fb.n_out);
  fb.rows_as_steps = batch.rows_as_steps;
  if (has_encoder()) attach_encoder_output(batch, begin, n, fb);
  model::KvView kv = cache_.view();
  kv.slots = slots.data();
  kv.n_kv = n_kv;
  kv.mask = mask_.data();
  kv.mask_swa = reach_here && reach.chunk == 0 ? mask_reach_.data() : nullptr;
  kv.mask_chunk = reach_here && reach.chunk > 0 ? mask_reach_.data() : nullptr;
  kv.kv_begin = kv_begin_.data();
  kv.kv_len = kv_len_.data();
  kv.mask_stride = width;
  model::KvView window;
  if (cache_.window() != nullptr) {
    window_view(batch, begin, n, window);
    kv.swa = &window;
  }
  model::RecurrentView states;
  if (cache_.recurrent() != nullptr) {
    states = cache_.recurrent()->view();
    states.slot = cache_.recurrent_slots().data();
    kv.rs = &states;
  }
  try {
    forward_outputs(fb, kv);
  } catch (...) {
    if (cache_.recurrent() != nullptr) {
      // The pass may have advanced some states: those sequences are forgotten whole.
      for (int64_t t = 0; t < n; ++t) cache_.remove(batch.seq[begin + t], 0, -1);
      throw;
    }
    for (int64_t t = 0; t < n; ++t) {
      cache_.remove(batch.seq[begin + t], batch.pos[begin + t], batch.pos[begin + t] + 1);
    }
    throw;
  }
  n_out_ += fb.n_out;
}

void Context::token_ranges(const Batch& batch, int64_t begin, int64_t n, int64_t n_kv) {
  cell_ranges(cache_, batch, begin, n, n_kv, kv_begin_, kv_len_);
}

void Context::window_view(const Batch& batch, int64_t begin, int64_t n, model::KvView& view) {
  KvCache& win = *cache_.window();
  const model::HParams& hp = model_->hparams();
  const int64_t n_kv = std::min(win.size(), (win.end() + kKvPad - 1) / kKvPad * kKvPad);
  cell_ranges(win, batch, begin, n, n_kv, win_begin_, win_len_);
  const int64_t width = *std::max_element(win_len_.begin(), win_len_.end());
  fill_masks(win, batch, begin, n, win_begin_, win_len_, width, hp.max_alibi_bias > 0.0f, nullptr, hp.reach(),
             &mask_win_);
  view = win.view();
  view.slots = cache_.window_slots().data();
  view.n_kv = n_kv;
  // Its one mask, the reach's, whichever its layers ask for.
  view.mask = mask_win_.data();
  view.mask_swa = mask_win_.data();
  view.mask_chunk = mask_win_.data();
  view.kv_begin = win_begin_.data();
  view.kv_len = win_len_.data();
  view.mask_stride = width;
}

namespace {

void cell_ranges(const KvCache& cache, const Batch& batch, int64_t begin, int64_t n, int64_t n_kv,
                 std::vector<int32_t>& kv_begin, std::vector<int32_t>& kv_len) {
  // The span of cells each sequence of the pass occupies: [lo, hi).
  SeqSet batch_seqs;
  for (int64_t t = 0; t < n; ++t) batch_seqs.add(batch.seq[begin + t]);
  std::array<int64_t, kMaxSequences> lo, hi;
  lo.fill(n_kv);
  hi.fill(0);
  for (int64_t i = 0; i < n_kv; ++i) {
    const KvCache::Cell& c = cache.cell(i);
    if (c.pos < 0) continue;
    c.seqs.for_each_common(batch_seqs, [&](int seq) {
      const auto s = static_cast<size_t>(seq);
      lo[s] = std::min(lo[s], i);
      hi[s] = i + 1;
    });
  }
  kv_begin.resize(static_cast<size_t>(n));
  kv_len.resize(static_cast<size_t>(n));
  for (int64_t t = 0; t < n; ++t) {
    const auto s = static_cast<size_t>(batch.seq[begin + t]);
    const int64_t b = lo[s] / kKvPad * kKvPad;
    const int64_t e = std::min(n_kv, (hi[s] + kKvPad - 1) / kKvPad * kKvPad);
    kv_begin[static_cast<size_t>(t)] = static_cast<int32_t>(b);
    kv_len[static_cast<size_t>(t)] = static_cast<int32_t>(e - b);
  }
}

void fill_masks(const KvCache& cache, const Batch& batch, int64_t begin, int64_t n,
                const std::vector<int32_t>& kv_begin, const std::vector<int32_t>& kv_len, int64_t width, bool alibi,
                std::vector<float>* mask, const model::AttentionReach& reach, std::vector<float>* mask_reach) {
  const auto size = static_cast<size_t>(n * width);
  if (mask != nullptr) mask->assign(size, kHidden);
  if (mask_reach != nullptr) mask_reach->assign(size, kHidden);
  for (int64_t t = 0; t < n; ++t) {
    const int seq = batch.seq[begin + t];
    const int32_t p = batch.pos[begin + t];
    const int64_t b = kv_begin[static_cast<size_t>(t)];
    for (int64_t j = 0; j < kv_len[static_cast<size_t>(t)]; ++j) {
      const KvCache::Cell& c = cache.cell(b + j);
      if (c.pos < 0 || !c.has(seq) || c.pos > p) continue;
      const float visible = alibi ? -static_cast<float>(p - c.pos) : 0.0f;
      const auto at = static_cast<size_t>(t * width + j);
      if (mask != nullptr) (*mask)[at] = visible;
      if (mask_reach != nullptr && reach.sees(p, c.pos)) (*mask_reach)[at] = visible;
    }
  }
}

}  // namespace

std::span<const float> Context::eval(std::span<const int32_t> tokens, int seq, bool all_logits, bool rows_as_steps) {
  if (tokens.empty()) throw InvalidArgument("nothing to evaluate");
  const int32_t start = cache_.max_pos(seq) + 1;
  scratch_batch_.clear();
  scratch_batch_.rows_as_steps = rows_as_steps;
  for (size_t i = 0; i < tokens.size(); ++i) {
    scratch_batch_.add(tokens[i], start + static_cast<int32_t>(i), seq, all_logits || i + 1 == tokens.size());
  }
  decode(scratch_batch_);
  if (all_logits) return {logits_.data(), logits_.size()};
  return logits(0);
}

}  // namespace ferrite::runtime
