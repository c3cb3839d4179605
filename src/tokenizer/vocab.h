// A tokenizer vocabulary read from GGUF metadata (`tokenizer.ggml.*`): the
// token texts, scores and types, the special token ids, the add-BOS/EOS and
// space-prefix flags, the BPE merge ranks and the pre-tokenizer name.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "gguf/file.h"
#include "tokenizer/string_map.h"

namespace ferrite::tokenizer {

constexpr int32_t kNoToken = -1;

enum class ModelKind { SPM, BPE, WPM, UGM, RWKV };

// tokenizer.ggml.token_type values.
enum class TokenType : int32_t { Undefined = 0, Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 };

// Token attribute bits.
enum TokenAttr : uint32_t {
  kAttrUndefined = 0,
  kAttrUnknown = 1u << 0,
  kAttrUnused = 1u << 1,
  kAttrNormal = 1u << 2,
  kAttrControl = 1u << 3,
  kAttrUserDefined = 1u << 4,
  kAttrByte = 1u << 5,
  kAttrNormalized = 1u << 6,
  kAttrLstrip = 1u << 7,
  kAttrRstrip = 1u << 8,
  kAttrSingleWord = 1u << 9,
};

struct Vocab {
  ModelKind kind = ModelKind::SPM;
  std::string model_name;  // tokenizer.ggml.model
  std::string pre;         // tokenizer.ggml.pre ("" when absent)

  std::vector<std::string> text;  // [n_vocab]
  std::vector<float> score;       // [n_vocab]
  std::vector<uint32_t> attr;     // [n_vocab] TokenAttr bits
  StringIdMap text_to_id;         // later ids win on duplicate texts
  size_t max_token_len = 0;

  int32_t bos = kNoToken, eos = kNoToken, eot = kNoToken, eom = kNoToken, unk = kNoToken, sep = kNoToken,
          pad = kNoToken, mask = kNoToken;
  std::unordered_set<int32_t> eog;

  bool add_bos = false;
  bool add_eos = false;
  bool add_sep = false;
  bool add_space_prefix = false;
  bool remove_extra_whitespaces = false;
  bool escape_whitespaces = true;       // UGM
  bool treat_whitespace_as_suffix = false;  // UGM
  bool ignore_merges = false;           // BPE: whole words found in the vocab skip merging
  bool clean_spaces = false;

  // BPE merges in rank order: (left text, right text).
  std::vector<std::pair<std::string, std::string>> merges;
  // UGM: tokenizer.ggml.precompiled_charsmap bytes.
  std::vector<uint8_t> precompiled_charsmap;

  // Ids whose attribute is CONTROL, USER_DEFINED or UNKNOWN, longest text first.
  std::vector<int32_t> special_tokens;

  int32_t n_vocab() const { return static_cast<int32_t>(text.size()); }
  int32_t find(std::string_view s) const { return text_to_id.find(s); }
  bool valid(int32_t id) const { return id >= 0 && id < n_vocab(); }

  // Reads the vocabulary. Throws ModelError on a missing/invalid field or an
  // unknown tokenizer model / pre-tokenizer.
  static Vocab from_gguf(const gguf::File& file);
};

}  // namespace ferrite::tokenizer
