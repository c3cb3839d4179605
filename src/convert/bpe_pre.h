// Naming the pre-tokenizer of a tokenizer.json vocabulary as llama.cpp's
// converter does: encode pre_tokenizer_check_text() with the checkpoint's
// tokenizer and look the hash of the ids up in bpe_pre_table.h. Without
// transformers at hand, the encoding is ferrite's own tokenizer built from
// the converted vocabulary once per distinct pre-tokenizer of the table; a
// name is accepted when its own encoding gives a hash that the table maps to
// it. The special tokens the Hugging Face tokenizer adds around a text come
// from tokenizer.json's post_processor (or, for the Llama/Gemma tokenizer
// classes, from add_bos_token / add_eos_token as transformers rebuilds it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "convert/hf_files.h"
#include "convert/vocab.h"

namespace ferrite::convert {

struct PreTokenizerMatch {
  std::string name;                 // "" when no candidate's hash is in the table
  std::string hash;                 // of the accepted encoding
  std::vector<std::string> tried;   // "name: hash" of every candidate
};

// `vocab` holds tokenizer.ggml.model ("gpt2" or "bert"), tokens, token_type
// and (gpt2) merges.
PreTokenizerMatch match_pre_tokenizer(const HfFiles& f, const VocabKeys& vocab);

// The ids a Hugging Face tokenizer puts before and after an encoded text.
struct SpecialAffixes {
  std::vector<int32_t> prefix, suffix;
};
SpecialAffixes special_affixes(const HfFiles& f, const VocabKeys& vocab);

}  // namespace ferrite::convert
