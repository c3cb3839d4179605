// Fill-in-the-middle: the vocabulary's FIM tokens and the prompt of an
// /infill request, in the prefix-suffix-middle order code models are
// trained on:
//   [BOS] ([FILE_SEP] name "\n" text)* [PRE] prefix [SUF] suffix [MID] prompt
// The texts are tokenized without special tokens (they are the user's code).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "tokenizer/tokenizer.h"

namespace ferrite::server {

struct FimTokens {
  int32_t pre = -1, suf = -1, mid = -1;
  int32_t sep = -1;  // file separator, for extra context files (optional)
  bool usable() const { return pre >= 0 && suf >= 0 && mid >= 0; }
};

// From the GGUF keys (tokenizer.ggml.fim_*_token_id, or the older
// prefix/suffix/middle_token_id), else from the token texts code models use
// (<|fim_prefix|>, <fim_prefix>, <PRE>, ...).
FimTokens find_fim_tokens(const gguf::File& file, const tokenizer::Tokenizer& tok);

struct FimChunk {
  std::string filename;
  std::string text;
};

// The prompt's tokens. Throws InvalidArgument when the vocabulary has no FIM
// tokens.
std::vector<int32_t> fim_prompt(const tokenizer::Tokenizer& tok, const FimTokens& fim, const std::string& prefix,
                                const std::string& suffix, const std::string& middle,
                                const std::vector<FimChunk>& extra);

}  // namespace ferrite::server
