// The first n tokens of a shared vocabulary as a tiny model's tokenizer
// metadata, so that llama.cpp loads the tiny models the golden tests write
// (it needs a tokenizer; token ids are all the tests feed it). The
// per-token arrays (tokens, scores, types) are cut to n; the special ids
// must fall within them; merges are left out (an SPM vocabulary has none).
#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "gguf/writer.h"

namespace ferrite::test {

inline void add_vocab_prefix(gguf::Writer& w, const std::filesystem::path& vocab, int64_t n) {
  const gguf::File f = gguf::File::open(vocab.string());
  for (const gguf::KeyValue& kv : f.metadata()) {
    if (kv.key.rfind("tokenizer.", 0) != 0 || kv.key == "tokenizer.ggml.merges") continue;
    if (kv.value.is_array() && static_cast<int64_t>(kv.value.size()) >= n &&
        (kv.key == "tokenizer.ggml.tokens" || kv.key == "tokenizer.ggml.scores" ||
         kv.key == "tokenizer.ggml.token_type")) {
      const std::vector<gguf::Value>& items = kv.value.items();
      w.set(kv.key, gguf::Value::array(kv.value.array_type(),
                                       std::vector<gguf::Value>(items.begin(), items.begin() + n)));
    } else if (kv.key.size() > 9 && kv.key.ends_with("_token_id") && kv.value.as_int() >= n) {
      continue;  // a special token beyond the prefix
    } else {
      w.set(kv.key, kv.value);
    }
  }
}

}  // namespace ferrite::test
