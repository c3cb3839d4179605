#include "tokenizer/vocab.h"

#include <algorithm>
#include <cctype>

#include "core/error.h"
#include "gguf/metadata.h"
#include "tokenizer/pretokenizer.h"

namespace ferrite::tokenizer {
namespace {

uint32_t attr_of_type(int64_t type) {
  switch (static_cast<TokenType>(type)) {
    case TokenType::Normal: return kAttrNormal;
    case TokenType::Unknown: return kAttrUnknown;
    case TokenType::Control: return kAttrControl;
    case TokenType::UserDefined: return kAttrUserDefined;
    case TokenType::Unused: return kAttrUnused;
    case TokenType::Byte: return kAttrByte;
    default: return kAttrUndefined;
  }
}

// Texts that end generation (and are control tokens) whatever their type.
constexpr const char* kEogTexts[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
                                     "<|eom_id|>", "<EOT>", "_<EOT>", "<|end_of_text|>"};
constexpr const char* kEotTexts[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
                                     "<EOT>", "_<EOT>", "<|end▁of▁sentence|>"};
constexpr const char* kFimTexts[] = {
    "<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>",
    "<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>",  "<SUF>", "▁<SUF>",
    "<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>",   "<MID>", "▁<MID>",
    "<|fim_pad|>",    "<fim-pad>",    "<fim_pad>",    "<PAD>",          "<|fim_repo|>", "<|repo_name|>",
    "<fim-repo>",     "<REPO>",       "<|file_sep|>"};
// FIM pad/repo/separator tokens also end generation.
constexpr const char* kFimEogTexts[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "<|fim_repo|>",
                                        "<|repo_name|>", "<fim-repo>", "<REPO>", "<|file_sep|>"};

std::string lower_ascii(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

Vocab Vocab::from_gguf(const gguf::File& file) {
  const gguf::Metadata md(file);
  Vocab v;
  v.model_name = md.get_string("tokenizer.ggml.model");
  v.pre = md.opt_string("tokenizer.ggml.pre").value_or("");

  if (v.model_name == "llama") {
    v.kind = ModelKind::SPM;
    v.bos = 1, v.eos = 2, v.unk = 0;
    v.add_space_prefix = true;
    v.add_bos = true;
  } else if (v.model_name == "bert") {
    v.kind = ModelKind::WPM;
    v.bos = 101, v.unk = 100, v.sep = 102, v.pad = 0, v.mask = 103;
    v.add_bos = true;
    v.add_sep = true;
    v.clean_spaces = true;
  } else if (v.model_name == "gpt2") {
    v.kind = ModelKind::BPE;
    v.bos = 11, v.eos = 11;
    PreTokenizerInfo info;
    if (!find_pretokenizer(v.pre, info)) {
      throw ModelError(file.path() + ": unknown pre-tokenizer type '" + v.pre + "' (tokenizer.ggml.pre)");
    }
    v.clean_spaces = info.clean_spaces;
    v.ignore_merges = info.ignore_merges;
    v.add_bos = info.add_bos;
    if (v.pre == "chatglm-bpe") v.bos = kNoToken;
    const gguf::Value* mv = file.find("tokenizer.ggml.merges");
    if (!mv) throw ModelError(file.path() + ": BPE tokenizer without tokenizer.ggml.merges");
    const auto merges = md.string_array("tokenizer.ggml.merges");
    v.merges.reserve(merges.size());
    for (const auto& m : merges) {
      const size_t pos = m.find(' ', 1);
      if (pos == std::string::npos) {
        v.merges.emplace_back();  // keeps the ranks of later merges
      } else {
        v.merges.emplace_back(m.substr(0, pos), m.substr(pos + 1));
      }
    }
  } else if (v.model_name == "t5") {
    v.kind = ModelKind::UGM;
    v.eos = 1, v.unk = 2, v.pad = 0;
    v.add_eos = true;
    if (const gguf::Value* cm = file.find("tokenizer.ggml.precompiled_charsmap")) {
      if (!cm->is_array()) throw ModelError(file.path() + ": tokenizer.ggml.precompiled_charsmap is not an array");
      v.precompiled_charsmap.reserve(cm->size());
      for (const auto& item : cm->items()) v.precompiled_charsmap.push_back(static_cast<uint8_t>(item.as_int()));
    }
  } else if (v.model_name == "rwkv") {
    v.kind = ModelKind::RWKV;  // no BOS, EOS or unknown token unless the file names them
  } else {
    throw ModelError(file.path() + ": unsupported tokenizer model '" + v.model_name + "' (tokenizer.ggml.model)");
  }
  v.add_space_prefix = md.opt_bool("tokenizer.ggml.add_space_prefix").value_or(v.add_space_prefix);
  v.remove_extra_whitespaces =
      md.opt_bool("tokenizer.ggml.remove_extra_whitespaces").value_or(v.remove_extra_whitespaces);

  v.text = md.string_array("tokenizer.ggml.tokens");
  if (v.text.empty()) throw ModelError(file.path() + ": tokenizer.ggml.tokens is missing or empty");
  const size_t n = v.text.size();
  for (size_t i = 0; i < n; ++i) {
    if (v.text[i].empty()) v.text[i] = "[EMPTY_" + std::to_string(i) + "]";
    v.max_token_len = std::max(v.max_token_len, v.text[i].size());
  }
  v.score = md.float_array("tokenizer.ggml.scores");
  if (v.score.empty()) v.score.assign(n, 0.0f);
  if (v.score.size() < n) throw ModelError(file.path() + ": fewer tokenizer.ggml.scores than tokens");
  v.score.resize(n);
  const auto types = md.int_array("tokenizer.ggml.token_type");
  if (!types.empty() && types.size() < n) throw ModelError(file.path() + ": fewer token types than tokens");
  v.attr.assign(n, kAttrNormal);
  for (size_t i = 0; i < types.size() && i < n; ++i) v.attr[i] = attr_of_type(types[i]);
  v.text_to_id.build(&v.text);

  // Special token ids from metadata override the defaults when in range.
  const auto n_tok = static_cast<int64_t>(n);
  auto read_id = [&](const char* key, int32_t& id) {
    if (id >= n_tok) id = kNoToken;
    if (auto x = md.opt_uint(key)) {
      if (static_cast<int64_t>(*x) < n_tok) id = static_cast<int32_t>(*x);
    }
  };
  read_id("tokenizer.ggml.bos_token_id", v.bos);
  read_id("tokenizer.ggml.eos_token_id", v.eos);
  read_id("tokenizer.ggml.eot_token_id", v.eot);
  read_id("tokenizer.ggml.eom_token_id", v.eom);
  read_id("tokenizer.ggml.unknown_token_id", v.unk);
  read_id("tokenizer.ggml.seperator_token_id", v.sep);
  read_id("tokenizer.ggml.padding_token_id", v.pad);
  read_id("tokenizer.ggml.mask_token_id", v.mask);
  v.add_bos = md.opt_bool("tokenizer.ggml.add_bos_token").value_or(v.add_bos);
  v.add_eos = md.opt_bool("tokenizer.ggml.add_eos_token").value_or(v.add_eos);
  v.add_sep = md.opt_bool("tokenizer.ggml.add_sep_token").value_or(v.add_sep);
  if (v.add_bos && v.bos == kNoToken) throw ModelError(file.path() + ": add_bos_token is set but there is no BOS id");
  if (v.add_eos && v.eos == kNoToken) throw ModelError(file.path() + ": add_eos_token is set but there is no EOS id");

  // Tokens recognised by their text: end-of-turn, FIM and end-of-generation
  // tokens are made control tokens.
  auto mark = [&](const char* t) -> int32_t {
    const int32_t id = v.find(t);
    if (id >= 0) v.attr[static_cast<size_t>(id)] |= kAttrControl;
    return id;
  };
  if (v.eot == kNoToken) {
    for (const char* t : kEotTexts) {
      if (v.find(t) >= 0) {
        v.eot = mark(t);
        break;
      }
    }
  }
  for (const char* t : kFimTexts) mark(t);
  for (const char* t : kFimEogTexts) {
    if (v.find(t) >= 0) v.eog.insert(mark(t));
  }
  for (const char* t : kEogTexts) {
    if (v.find(t) >= 0) v.eog.insert(mark(t));
  }
  if (v.eom == kNoToken && v.find("<|eom_id|>") >= 0) v.eom = v.find("<|eom_id|>");
  for (int32_t id : {v.eos, v.eot, v.eom}) {
    if (id != kNoToken) v.eog.insert(id);
  }
  for (size_t i = 0; i < n; ++i) {
    if ((v.attr[i] & kAttrControl) && v.text[i].find("unused") != std::string::npos) v.attr[i] |= kAttrUnused;
  }

  for (int32_t id = 0; id < v.n_vocab(); ++id) {
    if (v.attr[static_cast<size_t>(id)] & (kAttrControl | kAttrUserDefined | kAttrUnknown)) {
      v.special_tokens.push_back(id);
    }
  }
  std::stable_sort(v.special_tokens.begin(), v.special_tokens.end(), [&](int32_t a, int32_t b) {
    return v.text[static_cast<size_t>(a)].size() > v.text[static_cast<size_t>(b)].size();
  });

  // Per-model token attributes that GGUF does not store.
  const std::string name = lower_ascii(md.opt_string("general.name").value_or(""));
  auto set_attr = [&](int32_t id, uint32_t bit, bool on) {
    if (id < 0) return;
    auto& a = v.attr[static_cast<size_t>(id)];
    a = on ? (a | bit) : (a & ~bit);
  };
  if (v.pre == "jina-v2-de" || v.pre == "jina-v2-es" || v.pre == "jina-v2-code") {
    set_attr(v.find("<mask>"), kAttrLstrip, true);
  } else if (name.find("phi-3") != std::string::npos || name.find("phi3") != std::string::npos) {
    for (int32_t id : v.special_tokens) set_attr(id, kAttrRstrip, true);
    set_attr(v.find("</s>"), kAttrRstrip, true);
    for (const char* t : {"<unk>", "<s>", "<|endoftext|>"}) set_attr(v.find(t), kAttrRstrip, false);
  }
  return v;
}

}  // namespace ferrite::tokenizer
