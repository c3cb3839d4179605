// Contexts: a KV cache and scratch over a shared model; batch decode,
// logits and embeddings.
#include <array>
#include <span>

#include "capi/handles.h"
#include "runtime/kv_cache.h"

using namespace ferrite;
using capi::need;

namespace {

// The runtime's batch for a C batch: positions continue each sequence when
// the caller gives none; output rows default to the last token.
runtime::Batch to_batch(runtime::Context& ctx, const ferrite_batch& b) {
  if (b.n_tokens <= 0) throw capi::Failure(FERRITE_ERR_INVALID_ARGUMENT, "the batch has no tokens");
  need(b.tokens, "batch->tokens");
  runtime::Batch out;
  std::array<int32_t, runtime::kMaxSequences> next{};
  std::array<bool, runtime::kMaxSequences> seen{};
  for (int32_t i = 0; i < b.n_tokens; ++i) {
    const int32_t seq = b.seq_id ? b.seq_id[i] : 0;
    if (seq < 0 || seq >= runtime::kMaxSequences) {
      throw capi::Failure(FERRITE_ERR_INVALID_ARGUMENT, "batch token " + std::to_string(i) + ": sequence id " +
                                                            std::to_string(seq) + " is outside 0.." +
                                                            std::to_string(runtime::kMaxSequences - 1));
    }
    int32_t pos = 0;
    if (b.pos) {
      pos = b.pos[i];
      if (pos < 0) {
        throw capi::Failure(FERRITE_ERR_INVALID_ARGUMENT,
                            "batch token " + std::to_string(i) + ": negative position " + std::to_string(pos));
      }
    } else {
      const auto s = static_cast<size_t>(seq);
      if (!seen[s]) next[s] = ctx.cache().max_pos(seq) + 1;
      seen[s] = true;
      pos = next[s]++;
    }
    const bool want = b.logits ? b.logits[i] != 0 : i == b.n_tokens - 1;
    out.add(b.tokens[i], pos, seq, want);
  }
  return out;
}

}  // namespace

extern "C" {

ferrite_context_params ferrite_context_default_params(void) noexcept {
  ferrite_context_params p{};
  p.n_ctx = 0;
  p.n_batch = 512;
  p.n_threads = 0;
  p.embeddings = 0;
  return p;
}

ferrite_status ferrite_context_new(ferrite_model* model, const ferrite_context_params* params,
                                   ferrite_context** out) noexcept {
  if (out != nullptr) *out = nullptr;
  return capi::guarded([&] {
    const auto& m = need(model, "model");
    need(out, "out");
    const ferrite_context_params p = params ? *params : ferrite_context_default_params();
    if (p.n_ctx < 0) throw InvalidArgument("n_ctx must not be negative, got " + std::to_string(p.n_ctx));
    if (p.n_batch <= 0) throw InvalidArgument("n_batch must be positive, got " + std::to_string(p.n_batch));
    if (p.n_threads < 0) throw InvalidArgument("n_threads must not be negative, got " + std::to_string(p.n_threads));
    runtime::ContextParams cp;
    cp.n_ctx = p.n_ctx;
    cp.n_batch = p.n_batch;
    cp.n_threads = p.n_threads;
    cp.n_gpu_layers = m.state->n_gpu_layers;
    cp.embeddings = p.embeddings != 0;
    // The C API names no sequence count to size a sliding-window cache by
    // (runtime/README.md): its contexts keep the whole cache.
    cp.swa_full = true;
    auto c = std::make_unique<ferrite_context>();
    c->model = m.state;
    c->ctx = std::make_unique<runtime::Context>(m.state->model, cp);
    *out = c.release();
  });
}

void ferrite_context_free(ferrite_context* ctx) noexcept { delete ctx; }

int64_t ferrite_context_n_ctx(const ferrite_context* ctx) noexcept { return ctx ? ctx->ctx->n_ctx() : 0; }

ferrite_status ferrite_decode(ferrite_context* ctx, const ferrite_batch* batch) noexcept {
  return capi::guarded([&] {
    runtime::Context& c = *need(ctx, "ctx").ctx;
    const runtime::Batch b = to_batch(c, need(batch, "batch"));
    if (!c.model().arch().is_encoder()) {
      const int64_t free_cells = c.cache().size() - c.cache().used();
      if (b.size() > free_cells) {
        throw capi::Failure(FERRITE_ERR_CONTEXT_FULL, "the batch needs " + std::to_string(b.size()) +
                                                          " cells of the KV cache; " + std::to_string(free_cells) +
                                                          " of " + std::to_string(c.cache().size()) + " are free");
      }
    }
    c.decode(b);
  });
}

ferrite_status ferrite_encode(ferrite_context* ctx, const int32_t* tokens, int32_t n_tokens, int32_t seq_id) noexcept {
  return capi::guarded([&] {
    runtime::Context& c = *need(ctx, "ctx").ctx;
    if (n_tokens <= 0) throw capi::Failure(FERRITE_ERR_INVALID_ARGUMENT, "nothing to encode");
    need(tokens, "tokens");
    c.encode(std::span<const int32_t>(tokens, static_cast<size_t>(n_tokens)), seq_id);
  });
}

int32_t ferrite_context_has_encoder(const ferrite_context* ctx) noexcept {
  return ctx != nullptr && ctx->ctx->has_encoder() ? 1 : 0;
}

int32_t ferrite_decoder_start_token(const ferrite_context* ctx) noexcept {
  if (ctx == nullptr) return -1;
  return ctx->ctx->decoder_start_token(ctx->model->tok->bos());
}

int32_t ferrite_n_outputs(const ferrite_context* ctx) noexcept {
  return ctx ? static_cast<int32_t>(ctx->ctx->n_outputs()) : 0;
}

ferrite_status ferrite_get_logits(ferrite_context* ctx, int32_t i, const float** logits) noexcept {
  return capi::guarded([&] {
    runtime::Context& c = *need(ctx, "ctx").ctx;
    need(logits, "logits");
    *logits = nullptr;
    *logits = c.logits(i == -1 ? c.n_outputs() - 1 : i).data();
  });
}

ferrite_status ferrite_get_embeddings(ferrite_context* ctx, int32_t i, const float** embd) noexcept {
  return capi::guarded([&] {
    runtime::Context& c = *need(ctx, "ctx").ctx;
    need(embd, "embd");
    *embd = nullptr;
    *embd = c.token_embeddings(i == -1 ? c.n_outputs() - 1 : i).data();
  });
}

ferrite_status ferrite_get_embeddings_seq(ferrite_context* ctx, int32_t seq_id, const float** embd) noexcept {
  return capi::guarded([&] {
    runtime::Context& c = *need(ctx, "ctx").ctx;
    need(embd, "embd");
    *embd = nullptr;
    *embd = c.embeddings(seq_id).data();
  });
}

}  // extern "C"
