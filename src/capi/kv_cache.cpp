// KV cache operations on a context's sequences, and saving / restoring one
// sequence's state (runtime/context_state.h's format) to a file or a buffer.
#include "runtime/kv_cache.h"

#include "capi/handles.h"

using namespace ferrite;
using capi::need;

namespace {

void check_seq(int32_t seq, const char* what, bool allow_all) {
  if ((allow_all && seq < 0) || (seq >= 0 && seq < runtime::kMaxSequences)) return;
  throw capi::Failure(FERRITE_ERR_INVALID_ARGUMENT, std::string(what) + " " + std::to_string(seq) + " is outside 0.." +
                                                        std::to_string(runtime::kMaxSequences - 1));
}

std::span<const int32_t> token_span(const int32_t* tokens, size_t n) {
  if (tokens == nullptr && n > 0) throw capi::Failure(FERRITE_ERR_INVALID_ARGUMENT, "tokens is NULL");
  return {tokens, n};
}

// Hands a restored sequence's tokens back; when they do not fit, the
// sequence is emptied as on any failed load.
void restored(runtime::Context& c, int32_t seq, const std::vector<int32_t>& ids, int32_t* tokens, size_t capacity,
              size_t* n_tokens) {
  try {
    capi::copy_tokens(ids, tokens, capacity, n_tokens);
  } catch (...) {
    c.clear(seq);
    throw;
  }
}

}  // namespace

extern "C" {

ferrite_status ferrite_kv_seq_rm(ferrite_context* ctx, int32_t seq_id, int32_t p0, int32_t p1) noexcept {
  return capi::guarded([&] {
    runtime::Context& c = *need(ctx, "ctx").ctx;
    check_seq(seq_id, "seq_id", true);
    if (p0 < 0) throw InvalidArgument("p0 must not be negative, got " + std::to_string(p0));
    c.remove_range(seq_id, p0, p1);
  });
}

ferrite_status ferrite_kv_seq_cp(ferrite_context* ctx, int32_t src, int32_t dst) noexcept {
  return capi::guarded([&] {
    runtime::Context& c = *need(ctx, "ctx").ctx;
    check_seq(src, "src", false);
    check_seq(dst, "dst", false);
    c.cache().copy_sequence(src, dst);
  });
}

ferrite_status ferrite_kv_seq_add(ferrite_context* ctx, int32_t seq_id, int32_t p0, int32_t p1,
                                  int32_t delta) noexcept {
  return capi::guarded([&] {
    runtime::Context& c = *need(ctx, "ctx").ctx;
    check_seq(seq_id, "seq_id", true);
    if (p0 < 0) throw InvalidArgument("p0 must not be negative, got " + std::to_string(p0));
    c.shift_sequence(seq_id, p0, p1, delta);
  });
}

int32_t ferrite_kv_seq_pos_max(const ferrite_context* ctx, int32_t seq_id) noexcept {
  if (ctx == nullptr || seq_id < 0 || seq_id >= runtime::kMaxSequences) return -1;
  return ctx->ctx->cache().max_pos(seq_id);
}

void ferrite_kv_clear(ferrite_context* ctx) noexcept {
  if (ctx != nullptr) ctx->ctx->clear();
}

ferrite_status ferrite_state_seq_save_file(ferrite_context* ctx, int32_t seq_id, const char* path,
                                           const int32_t* tokens, size_t n_tokens) noexcept {
  return capi::guarded([&] {
    runtime::Context& c = *need(ctx, "ctx").ctx;
    check_seq(seq_id, "seq_id", false);
    c.save_sequence(seq_id, capi::need_text(path, "path"), token_span(tokens, n_tokens));
  });
}

ferrite_status ferrite_state_seq_load_file(ferrite_context* ctx, int32_t seq_id, const char* path, int32_t* tokens,
                                           size_t capacity, size_t* n_tokens) noexcept {
  return capi::guarded([&] {
    runtime::Context& c = *need(ctx, "ctx").ctx;
    check_seq(seq_id, "seq_id", false);
    need(n_tokens, "n_tokens");
    restored(c, seq_id, c.load_sequence(seq_id, capi::need_text(path, "path")), tokens, capacity, n_tokens);
  });
}

ferrite_status ferrite_state_seq_save_buffer(ferrite_context* ctx, int32_t seq_id, const int32_t* tokens,
                                             size_t n_tokens, void* buf, size_t capacity, size_t* length) noexcept {
  return capi::guarded([&] {
    runtime::Context& c = *need(ctx, "ctx").ctx;
    check_seq(seq_id, "seq_id", false);
    need(length, "length");
    const std::string bytes = c.save_sequence_bytes(seq_id, token_span(tokens, n_tokens));
    capi::copy_out(bytes.data(), bytes.size(), buf, capacity, length, false);
  });
}

ferrite_status ferrite_state_seq_load_buffer(ferrite_context* ctx, int32_t seq_id, const void* buf, size_t length,
                                             int32_t* tokens, size_t capacity, size_t* n_tokens) noexcept {
  return capi::guarded([&] {
    runtime::Context& c = *need(ctx, "ctx").ctx;
    check_seq(seq_id, "seq_id", false);
    need(n_tokens, "n_tokens");
    if (buf == nullptr && length > 0) throw capi::Failure(FERRITE_ERR_INVALID_ARGUMENT, "buf is NULL");
    const std::string_view bytes(static_cast<const char*>(buf ? buf : ""), length);
    restored(c, seq_id, c.load_sequence_bytes(seq_id, bytes), tokens, capacity, n_tokens);
  });
}

}  // extern "C"
