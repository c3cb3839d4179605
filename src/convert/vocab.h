// The tokenizer of a checkpoint as GGUF metadata (tokenizer.ggml.*), built the
// way llama.cpp's converter builds it:
//   vocab_sentencepiece  tokenizer.model (+ added_tokens.json, the added
//                        tokens of tokenizer_config.json) -> model "llama"
//   vocab_gpt2           tokenizer.json byte-level BPE -> model "gpt2", its
//                        merges, and tokenizer.ggml.pre named by the hash of
//                        a fixed text's encoding (bpe_pre_table.h)
//   vocab_bert           tokenizer.json WordPiece (or vocab.txt) -> model
//                        "bert", tokens in phantom-space form
//   vocab_t5             tokenizer.model Unigram -> model "t5" (its
//                        normalizer's flags and precompiled_charsmap), or
//                        a BPE tokenizer.model as vocab_sentencepiece
// Each adds the special tokens and flags of tokenizer_config.json and
// config.json, and the chat template.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "convert/hf_files.h"
#include "gguf/file.h"

namespace ferrite::convert {

// Sets `key` in a list of metadata, replacing an earlier value in place.
void set_kv(std::vector<gguf::KeyValue>& kvs, const std::string& key, gguf::Value v);

struct VocabKeys {
  std::vector<gguf::KeyValue> kvs;  // in the order they are written
  std::vector<std::string> notes;   // what the user should know (the tool prints them)
  int64_t n_tokens = 0;
  std::string summary;              // one line: kind, size, pre-tokenizer

  void set(const std::string& key, gguf::Value v);
  const gguf::Value* find(const std::string& key) const;
};

struct VocabOptions {
  // tokenizer.ggml.pre to write when the hash is not in llama.cpp's table
  // ("" refuses such a tokenizer, as llama.cpp does).
  std::string pre_override;
};

// Token types as GGUF stores them.
enum class GgufTokenType : int32_t { Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 };

// `vocab_size`: config.json's vocab_size, or -1 to take the tokenizer's size.
VocabKeys vocab_sentencepiece(const HfFiles& f, int64_t vocab_size, bool phi3_added_tokens = false);
VocabKeys vocab_gpt2(const HfFiles& f, int64_t vocab_size, const VocabOptions& opt);
VocabKeys vocab_bert(const HfFiles& f, int64_t vocab_size, const VocabOptions& opt);
VocabKeys vocab_t5(const HfFiles& f, int64_t vocab_size, const VocabOptions& opt);

// llama.cpp's test for added tokens that ought to be control tokens
// ("<|...|>", "<unused...>", "<pad>", ...).
bool looks_special(const std::string& text);

// `text` with each SentencePiece word mark (U+2581) written as a space.
std::string spm_marks_to_spaces(std::string text);

}  // namespace ferrite::convert
