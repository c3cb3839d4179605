#include "convert/bpe_pre.h"

#include <algorithm>
#include <map>
#include <memory>

#include "convert/bpe_pre_table.h"
#include "core/error.h"
#include "gguf/writer.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/tokenizer.h"

namespace ferrite::convert {
namespace {

int32_t id_of(const VocabKeys& vocab, const HfFiles& f, const std::string& text) {
  if (f.tokenizer) {
    const auto it = f.tokenizer->find("added_tokens");
    if (it != f.tokenizer->end() && it->is_array()) {
      for (const Json& a : *it) {
        if (a.is_object() && a.value("content", std::string()) == text && a.contains("id") &&
            a["id"].is_number_integer()) {
          return static_cast<int32_t>(a["id"].get<int64_t>());
        }
      }
    }
  }
  const gguf::Value* tokens = vocab.find("tokenizer.ggml.tokens");
  if (tokens != nullptr) {
    const auto& items = tokens->items();
    for (size_t i = 0; i < items.size(); ++i) {
      if (items[i].as_string() == text) return static_cast<int32_t>(i);
    }
  }
  throw ModelError(f.dir + ": the special token '" + text + "' is not in the vocabulary");
}

std::string token_text(const Json& t) {
  if (t.is_string()) return t.get<std::string>();
  if (t.is_object() && t.contains("content") && t["content"].is_string()) return t["content"].get<std::string>();
  return "";
}

void add_processor(const Json& p, const HfFiles& f, const VocabKeys& vocab, SpecialAffixes& out) {
  if (!p.is_object()) return;
  const std::string type = p.value("type", std::string());
  if (type == "Sequence" && p.contains("processors") && p["processors"].is_array()) {
    for (const Json& q : p["processors"]) add_processor(q, f, vocab, out);
  } else if (type == "TemplateProcessing" && p.contains("single") && p["single"].is_array()) {
    const Json& specials = p.contains("special_tokens") ? p["special_tokens"] : Json::object();
    bool after = false;
    for (const Json& item : p["single"]) {
      if (item.contains("Sequence")) {
        after = true;
        continue;
      }
      if (!item.contains("SpecialToken")) continue;
      const std::string name = item["SpecialToken"].value("id", std::string());
      std::vector<int32_t> ids;
      if (specials.contains(name) && specials[name].contains("ids") && specials[name]["ids"].is_array()) {
        for (const Json& id : specials[name]["ids"]) {
          if (id.is_number_integer()) ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
        }
      } else {
        ids.push_back(id_of(vocab, f, name));
      }
      auto& dst = after ? out.suffix : out.prefix;
      dst.insert(dst.end(), ids.begin(), ids.end());
    }
  } else if (type == "BertProcessing" || type == "RobertaProcessing") {
    for (const char* key : {"cls", "sep"}) {
      if (p.contains(key) && p[key].is_array() && p[key].size() == 2 && p[key][1].is_number_integer()) {
        (std::string(key) == "cls" ? out.prefix : out.suffix).push_back(static_cast<int32_t>(p[key][1].get<int64_t>()));
      }
    }
  }
}

// A GGUF image holding just the vocabulary, with `pre` as its pre-tokenizer.
std::vector<uint8_t> vocab_image(const VocabKeys& vocab, const std::string& pre) {
  gguf::Writer w;
  w.set("general.architecture", gguf::Value::string("vocab"));
  for (const gguf::KeyValue& kv : vocab.kvs) {
    if (kv.key.rfind("tokenizer.ggml.", 0) == 0 && kv.key.find("token_id") == std::string::npos &&
        kv.key.find("add_") == std::string::npos) {
      w.set(kv.key, kv.value);
    }
  }
  w.set("tokenizer.ggml.pre", gguf::Value::string(pre));
  return w.to_bytes({});
}

}  // namespace

SpecialAffixes special_affixes(const HfFiles& f, const VocabKeys& vocab) {
  SpecialAffixes out;
  const std::string cls = f.tokenizer_config ? f.tokenizer_config->value("tokenizer_class", std::string()) : "";
  static const char* const kRebuilt[] = {"LlamaTokenizer",     "LlamaTokenizerFast", "CodeLlamaTokenizer",
                                         "CodeLlamaTokenizerFast", "GemmaTokenizer", "GemmaTokenizerFast"};
  if (std::find(std::begin(kRebuilt), std::end(kRebuilt), cls) != std::end(kRebuilt)) {
    const Json& tc = *f.tokenizer_config;
    const bool add_bos = tc.value("add_bos_token", true), add_eos = tc.value("add_eos_token", false);
    if (add_bos && tc.contains("bos_token")) out.prefix.push_back(id_of(vocab, f, token_text(tc["bos_token"])));
    if (add_eos && tc.contains("eos_token")) out.suffix.push_back(id_of(vocab, f, token_text(tc["eos_token"])));
    return out;
  }
  if (f.tokenizer && f.tokenizer->contains("post_processor")) add_processor((*f.tokenizer)["post_processor"], f, vocab, out);
  return out;
}

PreTokenizerMatch match_pre_tokenizer(const HfFiles& f, const VocabKeys& vocab) {
  const SpecialAffixes affixes = special_affixes(f, vocab);
  const gguf::Value* model = vocab.find("tokenizer.ggml.model");
  const bool bert = model != nullptr && model->as_string() == "bert";
  // Candidates: one per distinct pre-tokenizer behaviour among the table's
  // names (a WordPiece vocabulary has no pre-tokenizer choice: one).
  std::vector<std::vector<std::string>> groups;
  std::map<std::pair<std::vector<std::string>, bool>, size_t> seen;
  for (const std::string& name : hashed_pre_tokenizer_names()) {
    tokenizer::PreTokenizerInfo info;
    if (!tokenizer::find_pretokenizer(name, info)) continue;
    const auto key = bert ? std::make_pair(std::vector<std::string>{}, false) : std::make_pair(info.regexes, info.ignore_merges);
    const auto [it, fresh] = seen.emplace(key, groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(name);
  }
  PreTokenizerMatch m;
  for (const auto& group : groups) {
    const std::vector<uint8_t> image = vocab_image(vocab, group.front());
    const gguf::File file = gguf::File::parse(image.data(), image.size(), "vocabulary of " + f.dir);
    const tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_gguf(file);
    std::vector<int32_t> ids = affixes.prefix;
    tok.encode(pre_tokenizer_check_text(), /*add_special=*/false, /*parse_special=*/false, ids);
    ids.insert(ids.end(), affixes.suffix.begin(), affixes.suffix.end());
    const std::string hash = token_ids_hash(ids);
    m.tried.push_back((bert ? std::string("wordpiece") : group.front()) + ": " + hash);
    const char* name = pre_tokenizer_for_hash(hash);
    if (name != nullptr && (bert || std::find(group.begin(), group.end(), name) != group.end())) {
      m.name = name;
      m.hash = hash;
      return m;
    }
  }
  return m;
}

}  // namespace ferrite::convert
