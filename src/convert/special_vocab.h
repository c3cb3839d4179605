// What llama.cpp's converter calls the special vocabulary: the BPE merges,
// the special token ids (bos, eos, unk, sep, pad, mask), the add_bos/add_eos
// flags and the chat template, gathered from tokenizer.json,
// tokenizer_config.json and config.json (the first source to name a type
// wins), with generation_config.json as a fallback for bos and eos.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "convert/hf_files.h"
#include "convert/vocab.h"

namespace ferrite::convert {

struct SpecialVocab {
  std::vector<std::string> merges;                   // "left right"
  std::vector<std::pair<std::string, int64_t>> ids;  // type -> id, in the order found
  std::vector<std::pair<std::string, bool>> add;     // "bos" -> add_bos_token
  std::optional<Json> chat_template;                 // a string, or a list of {name, template}

  // Sets `type` unless already set; ids outside [0, n_vocab) are dropped with a note.
  void set_id(const std::string& type, int64_t id, int64_t n_vocab, std::vector<std::string>& notes);
  std::optional<int64_t> id(const std::string& type) const;
  // Appends the keys to `out`.
  void write(VocabKeys& out) const;
};

SpecialVocab load_special_vocab(const HfFiles& f, int64_t n_vocab, bool load_merges, std::vector<std::string>& notes);

}  // namespace ferrite::convert
