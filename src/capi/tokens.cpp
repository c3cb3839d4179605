// Tokenizer entry points: text to tokens and back, special token ids.
#include "capi/handles.h"

using namespace ferrite;
using capi::need;

namespace {

const tokenizer::Tokenizer* tok_of(const ferrite_model* m) { return m ? m->state->tok.get() : nullptr; }

}  // namespace

extern "C" {

int32_t ferrite_token_bos(const ferrite_model* m) noexcept { return m ? tok_of(m)->bos() : -1; }
int32_t ferrite_token_eos(const ferrite_model* m) noexcept { return m ? tok_of(m)->eos() : -1; }
int32_t ferrite_token_eot(const ferrite_model* m) noexcept { return m ? tok_of(m)->eot() : -1; }

int ferrite_token_is_eog(const ferrite_model* m, int32_t token) noexcept {
  if (m == nullptr || token < 0 || token >= tok_of(m)->n_vocab()) return 0;
  return tok_of(m)->is_eog(token) ? 1 : 0;
}

ferrite_status ferrite_tokenize(const ferrite_model* model, const char* text, size_t len, int add_special,
                                int parse_special, int32_t* tokens, size_t capacity, size_t* n_tokens) noexcept {
  return capi::guarded([&] {
    const auto& m = need(model, "model");
    need(n_tokens, "n_tokens");
    if (text == nullptr && len > 0) throw capi::Failure(FERRITE_ERR_INVALID_ARGUMENT, "text is NULL");
    const std::vector<int32_t> ids =
        m.state->tok->encode(std::string_view(text ? text : "", len), add_special != 0, parse_special != 0);
    capi::copy_tokens(ids, tokens, capacity, n_tokens);
  });
}

ferrite_status ferrite_token_to_piece(const ferrite_model* model, int32_t token, int special, char* buf,
                                      size_t capacity, size_t* length) noexcept {
  return capi::guarded([&] {
    const auto& tok = *need(model, "model").state->tok;
    capi::check_token(tok, token);
    const std::string piece = tok.token_to_piece(token, special != 0);
    capi::copy_out(piece.data(), piece.size(), buf, capacity, length, true);
  });
}

ferrite_status ferrite_detokenize(const ferrite_model* model, const int32_t* tokens, size_t n_tokens, int special,
                                  char* buf, size_t capacity, size_t* length) noexcept {
  return capi::guarded([&] {
    const auto& tok = *need(model, "model").state->tok;
    if (tokens == nullptr && n_tokens > 0) throw capi::Failure(FERRITE_ERR_INVALID_ARGUMENT, "tokens is NULL");
    std::vector<int32_t> ids(tokens, tokens + n_tokens);
    for (int32_t t : ids) capi::check_token(tok, t);
    const std::string text = tok.decode(ids, special != 0);
    capi::copy_out(text.data(), text.size(), buf, capacity, length, true);
  });
}

}  // extern "C"
