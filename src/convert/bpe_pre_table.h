// How llama.cpp names the pre-tokenizer of a byte-level BPE (or WordPiece)
// tokenizer when it converts a checkpoint: it encodes a fixed text with the
// checkpoint's own tokenizer (special tokens added as the tokenizer adds
// them), hashes the decimal list of ids, and looks the hash up in a table of
// known tokenizers. An unknown hash is refused. The text and the table are
// facts taken from llama.cpp's convert_hf_to_gguf.py (build c392e50); this
// file holds no code of it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ferrite::convert {

// The fixed text (431 bytes of UTF-8).
std::string_view pre_tokenizer_check_text();

// SHA-256 (hex) of the ids written as Python prints a list: "[1, 22, 333]".
std::string token_ids_hash(const std::vector<int32_t>& ids);

// The pre-tokenizer name for a hash, or nullptr when the table lacks it.
// Where two rows share a hash, the later one wins (llama.cpp tests them in
// turn and keeps the last match).
const char* pre_tokenizer_for_hash(std::string_view hex);

// Every name the table can give, each once, in table order.
std::vector<std::string> hashed_pre_tokenizer_names();

}  // namespace ferrite::convert
