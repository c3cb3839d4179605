// Text <-> token ids for the vocabularies GGUF files carry: SentencePiece BPE
// ("llama"), byte-level BPE with its pre-tokenizer ("gpt2"), WordPiece
// ("bert") and Unigram ("t5"). Behaves like the reference engine's
// tokenizer: special/control tokens are matched in the text only when
// `parse_special` is set (user-defined tokens always are), BOS/EOS are added
// as the metadata says when `add_special` is set.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/file.h"
#include "tokenizer/vocab.h"

namespace ferrite::tokenizer {

// A byte range [begin, end) of a text.
struct TextRange {
  size_t begin = 0;
  size_t end = 0;
};

class Tokenizer {
 public:
  // Builds the tokenizer from a model's metadata. Throws ModelError.
  static Tokenizer from_gguf(const gguf::File& file);
  // Opens `path` and reads its vocabulary.
  static Tokenizer from_file(const std::string& path);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // Token ids of `text`. Any bytes are accepted (invalid UTF-8 included).
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const;
  // Same, appending to `out`.
  void encode(std::string_view text, bool add_special, bool parse_special, std::vector<int32_t>& out) const;
  // Same, but no control or unknown token is matched where its text would
  // overlap one of the `literal` ranges (sorted, disjoint): text that came
  // from a user inside a prompt otherwise parsed for special tokens.
  void encode(std::string_view text, bool add_special, bool parse_special, std::vector<int32_t>& out,
              std::span<const TextRange> literal) const;

  // Bytes of one token. Control/unknown tokens give "" unless `special`.
  // Throws InvalidArgument for an id out of range.
  std::string token_to_piece(int32_t id, bool special) const;
  std::string_view piece_view(int32_t id, bool special) const;

  // Concatenated pieces; with an SPM space prefix the first piece loses its
  // leading space (so decode(encode(x)) == x).
  std::string decode(const std::vector<int32_t>& ids, bool special = false) const;

  int32_t n_vocab() const;
  int32_t bos() const;
  int32_t eos() const;
  int32_t eot() const;
  int32_t unk() const;
  bool add_bos() const;
  bool add_eos() const;
  bool is_eog(int32_t id) const;
  bool is_control(int32_t id) const;
  // True when the first piece of a decoded text loses one leading space.
  bool strips_leading_space() const;
  const Vocab& vocab() const;

  struct Impl;

 private:
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ferrite::tokenizer
