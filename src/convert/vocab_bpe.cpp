// tokenizer.json vocabularies (byte-level BPE -> "gpt2", WordPiece ->
// "bert"), as llama.cpp's get_vocab_base builds them: ids below vocab_size
// that no token has become "[PAD<i>]" (UNUSED); added tokens are CONTROL when
// special or special-looking, else USER_DEFINED; the rest NORMAL. BERT's
// tokens are then written in phantom-space form: "##x" -> "x", "[X]" kept,
// any other "w" -> "\u2581w".
#include <fstream>
#include <map>

#include "convert/bpe_pre.h"
#include "convert/special_vocab.h"
#include "convert/vocab.h"
#include "core/error.h"

namespace ferrite::convert {
namespace {

constexpr int64_t kMaxVocab = int64_t{1} << 24;

struct BaseVocab {
  std::vector<std::string> tokens;
  std::vector<GgufTokenType> types;
};

void check_id(int64_t id, const std::string& where, const std::string& text) {
  if (id < 0 || id >= kMaxVocab) throw ModelError(where + ": token '" + text + "' has id " + std::to_string(id) + ", out of range");
}

// id -> (text, added, special) from tokenizer.json (or vocab.txt for BERT).
struct Entry {
  std::string text;
  bool added = false;
  bool special = false;
};

std::map<int64_t, Entry> read_entries(const HfFiles& f, const char* model_type) {
  std::map<int64_t, Entry> by_id;
  if (!f.tokenizer) {
    if (std::string(model_type) == "WordPiece" && f.has("vocab.txt")) {
      // A BertTokenizer folder without tokenizer.json: one token per line;
      // the special tokens of tokenizer_config.json (or BERT's) are control.
      std::ifstream in(f.path("vocab.txt"));
      std::string line;
      int64_t id = 0;
      std::vector<std::string> specials = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
      if (f.tokenizer_config) {
        for (const char* k : {"pad_token", "unk_token", "cls_token", "sep_token", "mask_token"}) {
          if (f.tokenizer_config->contains(k) && (*f.tokenizer_config)[k].is_string()) {
            specials.push_back((*f.tokenizer_config)[k].get<std::string>());
          }
        }
      }
      while (std::getline(in, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        check_id(id, f.path("vocab.txt"), line);
        const bool sp = std::find(specials.begin(), specials.end(), line) != specials.end();
        by_id[id++] = Entry{line, sp, sp};
      }
      if (by_id.empty()) throw ModelError(f.path("vocab.txt") + ": empty");
      return by_id;
    }
    throw IoError(f.path("tokenizer.json"), std::string("missing: this architecture's tokenizer is a ") +
                                                (std::string(model_type) == "BPE" ? "byte-level BPE" : "WordPiece") +
                                                " tokenizer.json");
  }
  const std::string where = f.path("tokenizer.json");
  const Json* model = json_object(*f.tokenizer, "model", where);
  if (model == nullptr) throw ModelError(where + ": no \"model\"");
  const std::string type = model->value("type", std::string());
  if (type != model_type) {
    throw ModelError(where + ": model.type is '" + type + "'; this architecture's converter reads " + model_type +
                     " tokenizers");
  }
  const Json* vocab = json_object(*model, "vocab", where + " model");
  if (vocab == nullptr) throw ModelError(where + ": model.vocab is missing");
  for (const auto& [text, id] : vocab->items()) {
    if (!id.is_number_integer()) throw ModelError(where + ": id of token '" + text + "' is not an integer");
    check_id(id.get<int64_t>(), where, text);
    by_id[id.get<int64_t>()] = Entry{text, false, false};
  }
  const auto added = f.tokenizer->find("added_tokens");
  if (added != f.tokenizer->end() && added->is_array()) {
    for (const Json& a : *added) {
      if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() || !a.contains("content") ||
          !a["content"].is_string()) {
        throw ModelError(where + ": an added_tokens entry lacks an integer id or a content string");
      }
      const int64_t id = a["id"].get<int64_t>();
      check_id(id, where, a["content"].get<std::string>());
      by_id[id] = Entry{a["content"].get<std::string>(), true, a.value("special", false)};
    }
  }
  if (by_id.empty()) throw ModelError(where + ": the vocabulary is empty");
  return by_id;
}

BaseVocab vocab_base(const HfFiles& f, int64_t vocab_size, const char* model_type) {
  const std::map<int64_t, Entry> by_id = read_entries(f, model_type);
  if (vocab_size < 0) vocab_size = static_cast<int64_t>(by_id.size());
  const int64_t max_id = by_id.rbegin()->first;
  if (max_id >= vocab_size) {
    throw ModelError(f.dir + ": the tokenizer has token id " + std::to_string(max_id) +
                     ", but config.json's vocab_size is " + std::to_string(vocab_size));
  }
  BaseVocab v;
  v.tokens.resize(static_cast<size_t>(vocab_size));
  v.types.resize(static_cast<size_t>(vocab_size));
  for (int64_t i = 0; i < vocab_size; ++i) {
    const auto it = by_id.find(i);
    auto& text = v.tokens[static_cast<size_t>(i)];
    auto& type = v.types[static_cast<size_t>(i)];
    if (it == by_id.end()) {
      text = "[PAD" + std::to_string(i) + "]";
      type = GgufTokenType::Unused;
    } else if (!it->second.added) {
      text = it->second.text;
      type = GgufTokenType::Normal;
    } else if (it->second.special || looks_special(it->second.text)) {
      text = it->second.text;
      type = GgufTokenType::Control;
    } else {
      text = spm_marks_to_spaces(it->second.text);
      type = GgufTokenType::UserDefined;
    }
  }
  return v;
}

void put_tokens(VocabKeys& out, const BaseVocab& v) {
  std::vector<gguf::Value> tv, yv;
  tv.reserve(v.tokens.size());
  yv.reserve(v.tokens.size());
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    tv.push_back(gguf::Value::string(v.tokens[i]));
    yv.push_back(gguf::Value::i32(static_cast<int32_t>(v.types[i])));
  }
  out.set("tokenizer.ggml.tokens", gguf::Value::array(gguf::ValueType::STRING, std::move(tv)));
  out.set("tokenizer.ggml.token_type", gguf::Value::array(gguf::ValueType::INT32, std::move(yv)));
}

// Sets tokenizer.ggml.pre from the hash, or the override, or refuses.
std::string name_pre(const HfFiles& f, VocabKeys& out, const VocabOptions& opt) {
  const PreTokenizerMatch m = match_pre_tokenizer(f, out);
  std::string pre = m.name;
  if (pre.empty()) {
    if (opt.pre_override.empty()) {
      std::string tried;
      for (const std::string& t : m.tried) tried += "\n  " + t;
      throw ModelError(f.dir + ": the tokenizer's pre-tokenizer is not one llama.cpp recognises (the hash of its "
                       "encoding of the check text is in none of its table's rows). If you know which it is, pass "
                       "--tokenizer-pre NAME. Hashes tried:" + tried);
    }
    pre = opt.pre_override;
    out.notes.push_back("pre-tokenizer not recognised by its hash; written as '" + pre + "' (--tokenizer-pre)");
  } else if (!opt.pre_override.empty() && opt.pre_override != pre) {
    out.notes.push_back("--tokenizer-pre " + opt.pre_override + " ignored: the hash names '" + pre + "'");
  }
  out.set("tokenizer.ggml.pre", gguf::Value::string(pre));
  return pre;
}

}  // namespace

VocabKeys vocab_gpt2(const HfFiles& f, int64_t vocab_size, const VocabOptions& opt) {
  const BaseVocab v = vocab_base(f, vocab_size, "BPE");
  VocabKeys out;
  out.set("tokenizer.ggml.model", gguf::Value::string("gpt2"));
  put_tokens(out, v);
  const SpecialVocab sv = load_special_vocab(f, static_cast<int64_t>(v.tokens.size()), true, out.notes);
  if (sv.merges.empty()) throw ModelError(f.path("tokenizer.json") + ": a BPE tokenizer without merges");
  sv.write(out);
  const std::string pre = name_pre(f, out, opt);
  out.n_tokens = static_cast<int64_t>(v.tokens.size());
  out.summary = "byte-level BPE (gpt2), pre-tokenizer " + pre + ", " + std::to_string(out.n_tokens) + " tokens";
  return out;
}

VocabKeys vocab_bert(const HfFiles& f, int64_t vocab_size, const VocabOptions& opt) {
  BaseVocab v = vocab_base(f, vocab_size, "WordPiece");
  for (std::string& t : v.tokens) {
    if (t.size() >= 2 && t.front() == '[' && t.back() == ']') continue;
    if (t.rfind("##", 0) == 0) {
      t = t.substr(2);
    } else {
      t = "\xe2\x96\x81" + t;
    }
  }
  VocabKeys out;
  const int64_t type_count = json_int(f.config, "type_vocab_size", f.path("config.json")).value_or(1);
  out.set("tokenizer.ggml.token_type_count", gguf::Value::u32(static_cast<uint32_t>(type_count)));
  out.set("tokenizer.ggml.model", gguf::Value::string("bert"));
  put_tokens(out, v);
  load_special_vocab(f, static_cast<int64_t>(v.tokens.size()), false, out.notes).write(out);
  const std::string pre = name_pre(f, out, opt);
  out.n_tokens = static_cast<int64_t>(v.tokens.size());
  out.summary = "WordPiece (bert), pre-tokenizer " + pre + ", " + std::to_string(out.n_tokens) + " tokens";
  return out;
}

void set_kv(std::vector<gguf::KeyValue>& kvs, const std::string& key, gguf::Value v) {
  for (gguf::KeyValue& kv : kvs) {
    if (kv.key == key) {
      kv.value = std::move(v);
      return;
    }
  }
  kvs.push_back(gguf::KeyValue{key, std::move(v)});
}

void VocabKeys::set(const std::string& key, gguf::Value v) { set_kv(kvs, key, std::move(v)); }

const gguf::Value* VocabKeys::find(const std::string& key) const {
  for (const gguf::KeyValue& kv : kvs) {
    if (kv.key == key) return &kv.value;
  }
  return nullptr;
}

bool looks_special(const std::string& t) {
  auto wraps = [&](const char* a, const char* b) {
    const std::string sa(a), sb(b);
    return t.size() >= sa.size() + sb.size() && t.rfind(sa, 0) == 0 && t.compare(t.size() - sb.size(), sb.size(), sb) == 0;
  };
  return t == "<pad>" || t == "<mask>" || t == "<2mass>" || t == "[@BOS@]" || wraps("<|", "|>") ||
         wraps("<\xef\xbd\x9c", "\xef\xbd\x9c>") || wraps("<unused", ">");
}

}  // namespace ferrite::convert
