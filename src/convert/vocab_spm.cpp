// tokenizer.model -> tokenizer.ggml.* (model "llama"), as llama.cpp's
// converter does it: every id below vocab_size starts as "[PAD<i>]" with score
// -10000 and type UNUSED; the SentencePiece pieces fill the front (a
// user-defined piece counts as NORMAL there); added_tokens.json and the added
// tokens of tokenizer_config.json then overwrite their ids with score -1000.
#include <filesystem>
#include <string>
#include <string_view>

#include "convert/special_vocab.h"
#include "convert/spm_model.h"
#include "convert/vocab.h"
#include "core/error.h"

namespace ferrite::convert {
namespace {

GgufTokenType type_of(SpmPieceType t) {
  switch (t) {
    case SpmPieceType::Unknown: return GgufTokenType::Unknown;
    case SpmPieceType::Control: return GgufTokenType::Control;
    case SpmPieceType::Unused: return GgufTokenType::Unused;
    case SpmPieceType::Byte: return GgufTokenType::Byte;
    default: return GgufTokenType::Normal;
  }
}

}  // namespace

std::string spm_marks_to_spaces(std::string text) {
  // Copied piece by piece (gcc 12's -Wrestrict misjudges string::replace here).
  static const std::string_view kMark = "\xe2\x96\x81";
  std::string out;
  out.reserve(text.size());
  size_t from = 0;
  for (size_t p = text.find(kMark); p != std::string::npos; p = text.find(kMark, from)) {
    out.append(text, from, p - from);
    out.push_back(' ');
    from = p + kMark.size();
  }
  out.append(text, from, std::string::npos);
  return out;
}

VocabKeys vocab_sentencepiece(const HfFiles& f, int64_t vocab_size, bool phi3_added_tokens) {
  const std::string path = f.path("tokenizer.model");
  if (!f.has("tokenizer.model")) {
    throw IoError(path, "missing: this architecture's tokenizer is a SentencePiece model (tokenizer.model)");
  }
  const SpmModel spm = SpmModel::read(path);
  const auto n_pieces = static_cast<int64_t>(spm.pieces.size());
  if (vocab_size < 0) vocab_size = n_pieces;
  if (n_pieces > vocab_size) {
    throw ModelError(path + ": " + std::to_string(n_pieces) + " pieces, more than config.json's vocab_size " +
                     std::to_string(vocab_size));
  }
  VocabKeys out;
  std::vector<std::string> tokens(static_cast<size_t>(vocab_size));
  std::vector<float> scores(static_cast<size_t>(vocab_size), -10000.0f);
  std::vector<GgufTokenType> types(static_cast<size_t>(vocab_size), GgufTokenType::Unused);
  for (int64_t i = 0; i < vocab_size; ++i) tokens[static_cast<size_t>(i)] = "[PAD" + std::to_string(i) + "]";
  for (int64_t i = 0; i < n_pieces; ++i) {
    const SpmPiece& p = spm.pieces[static_cast<size_t>(i)];
    tokens[static_cast<size_t>(i)] = p.piece;
    scores[static_cast<size_t>(i)] = p.score;
    types[static_cast<size_t>(i)] = type_of(p.type);
  }
  auto place = [&](int64_t id, const std::string& text, GgufTokenType type, const std::string& source) {
    if (id < 0 || id >= vocab_size) {
      out.notes.push_back(source + ": token id " + std::to_string(id) + " is outside the vocabulary (" +
                          std::to_string(vocab_size) + "): ignored");
      return;
    }
    tokens[static_cast<size_t>(id)] = text;
    scores[static_cast<size_t>(id)] = -1000.0f;
    types[static_cast<size_t>(id)] = type;
  };
  if (f.has("added_tokens.json")) {
    const Json added = read_json_file(f.path("added_tokens.json"), kMaxConfigBytes);
    if (!added.is_object()) throw ModelError(f.path("added_tokens.json") + ": is not a JSON object");
    for (const auto& [text, id] : added.items()) {
      if (!id.is_number_integer()) throw ModelError(f.path("added_tokens.json") + ": id of '" + text + "' is not an integer");
      place(id.get<int64_t>(), text, GgufTokenType::UserDefined, "added_tokens.json");
    }
  }
  // Added tokens: CONTROL when special (or, except for phi3, when they look
  // special), else USER_DEFINED with SentencePiece's U+2581 turned to spaces.
  auto add_decoded = [&](const Json& list_or_map, bool is_map, const std::string& source) {
    auto one = [&](int64_t id, const Json& d) {
      if (!d.is_object() || !d.contains("content") || !d["content"].is_string()) return;
      std::string text = d["content"].get<std::string>();
      const bool special = d.value("special", false);
      if (special || (!phi3_added_tokens && looks_special(text))) {
        place(id, text, GgufTokenType::Control, source);
      } else {
        if (!phi3_added_tokens) text = spm_marks_to_spaces(text);
        place(id, text, GgufTokenType::UserDefined, source);
      }
    };
    if (is_map) {
      for (const auto& [key, d] : list_or_map.items()) {
        char* end = nullptr;
        const long long id = std::strtoll(key.c_str(), &end, 10);
        if (key.empty() || *end != '\0') throw ModelError(source + ": added_tokens_decoder key '" + key + "' is not an id");
        one(id, d);
      }
    } else {
      for (const Json& d : list_or_map) {
        if (d.is_object() && d.contains("id") && d["id"].is_number_integer()) one(d["id"].get<int64_t>(), d);
      }
    }
  };
  if (f.tokenizer_config) {
    const auto it = f.tokenizer_config->find("added_tokens_decoder");
    if (it != f.tokenizer_config->end() && it->is_object()) add_decoded(*it, true, f.path("tokenizer_config.json"));
  }
  if (phi3_added_tokens && f.tokenizer) {
    const auto it = f.tokenizer->find("added_tokens");
    if (it != f.tokenizer->end() && it->is_array()) add_decoded(*it, false, f.path("tokenizer.json"));
  }

  std::vector<gguf::Value> tv, sv, yv;
  for (int64_t i = 0; i < vocab_size; ++i) {
    tv.push_back(gguf::Value::string(tokens[static_cast<size_t>(i)]));
    sv.push_back(gguf::Value::f32(scores[static_cast<size_t>(i)]));
    yv.push_back(gguf::Value::i32(static_cast<int32_t>(types[static_cast<size_t>(i)])));
  }
  out.set("tokenizer.ggml.model", gguf::Value::string("llama"));
  out.set("tokenizer.ggml.pre", gguf::Value::string("default"));
  out.set("tokenizer.ggml.tokens", gguf::Value::array(gguf::ValueType::STRING, std::move(tv)));
  out.set("tokenizer.ggml.scores", gguf::Value::array(gguf::ValueType::FLOAT32, std::move(sv)));
  out.set("tokenizer.ggml.token_type", gguf::Value::array(gguf::ValueType::INT32, std::move(yv)));
  load_special_vocab(f, vocab_size, false, out.notes).write(out);
  out.n_tokens = vocab_size;
  out.summary = "SentencePiece (llama), " + std::to_string(vocab_size) + " tokens";
  return out;
}

}  // namespace ferrite::convert
