#include "server/fim.h"

#include "core/error.h"

namespace ferrite::server {
namespace {

int32_t id_from_key(const gguf::File& file, const char* key, int32_t n_vocab) {
  const gguf::Value* v = file.find(key);
  if (!v || !v->is_integer()) return -1;
  const int64_t id = v->as_int();
  return id >= 0 && id < n_vocab ? static_cast<int32_t>(id) : -1;
}

int32_t id_from_texts(const tokenizer::Tokenizer& tok, std::initializer_list<const char*> texts) {
  for (const char* t : texts) {
    const int32_t id = tok.vocab().find(t);
    if (id >= 0) return id;
  }
  return -1;
}

int32_t first_of(int32_t a, int32_t b, int32_t c) { return a >= 0 ? a : b >= 0 ? b : c; }

}  // namespace

FimTokens find_fim_tokens(const gguf::File& file, const tokenizer::Tokenizer& tok) {
  const int32_t n = tok.n_vocab();
  FimTokens f;
  f.pre = first_of(id_from_key(file, "tokenizer.ggml.fim_pre_token_id", n),
                   id_from_key(file, "tokenizer.ggml.prefix_token_id", n),
                   id_from_texts(tok, {"<|fim_prefix|>", "<fim_prefix>", "<fim-prefix>", "<PRE>", "\xE2\x96\x81<PRE>",
                                       "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "begin\xEF\xBD\x9C>"}));
  f.suf = first_of(id_from_key(file, "tokenizer.ggml.fim_suf_token_id", n),
                   id_from_key(file, "tokenizer.ggml.suffix_token_id", n),
                   id_from_texts(tok, {"<|fim_suffix|>", "<fim_suffix>", "<fim-suffix>", "<SUF>", "\xE2\x96\x81<SUF>",
                                       "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "hole\xEF\xBD\x9C>"}));
  f.mid = first_of(id_from_key(file, "tokenizer.ggml.fim_mid_token_id", n),
                   id_from_key(file, "tokenizer.ggml.middle_token_id", n),
                   id_from_texts(tok, {"<|fim_middle|>", "<fim_middle>", "<fim-middle>", "<MID>", "\xE2\x96\x81<MID>",
                                       "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "end\xEF\xBD\x9C>"}));
  f.sep = first_of(id_from_key(file, "tokenizer.ggml.fim_sep_token_id", n), -1,
                   id_from_texts(tok, {"<|file_sep|>", "<file_sep>"}));
  return f;
}

std::vector<int32_t> fim_prompt(const tokenizer::Tokenizer& tok, const FimTokens& fim, const std::string& prefix,
                                const std::string& suffix, const std::string& middle,
                                const std::vector<FimChunk>& extra) {
  if (!fim.usable()) {
    throw InvalidArgument("this model's vocabulary has no fill-in-the-middle tokens (prefix, suffix, middle)");
  }
  std::vector<int32_t> ids;
  if (tok.add_bos() && tok.bos() >= 0) ids.push_back(tok.bos());
  for (const FimChunk& c : extra) {
    if (fim.sep >= 0) ids.push_back(fim.sep);
    tok.encode(c.filename + "\n" + c.text, false, false, ids);
  }
  ids.push_back(fim.pre);
  tok.encode(prefix, false, false, ids);
  ids.push_back(fim.suf);
  tok.encode(suffix, false, false, ids);
  ids.push_back(fim.mid);
  tok.encode(middle, false, false, ids);
  return ids;
}

}  // namespace ferrite::server
