#include "convert/special_vocab.h"

#include <fstream>
#include <sstream>

#include "core/error.h"

namespace ferrite::convert {
namespace {

constexpr const char* kTypes[] = {"bos", "eos", "unk", "sep", "pad", "cls", "mask"};
constexpr uint64_t kMaxTemplateBytes = 16ull << 20;

// GGUF keys of the types llama.cpp writes ("cls" has none).
const char* id_key(const std::string& type) {
  if (type == "bos") return "tokenizer.ggml.bos_token_id";
  if (type == "eos") return "tokenizer.ggml.eos_token_id";
  if (type == "unk") return "tokenizer.ggml.unknown_token_id";
  if (type == "sep") return "tokenizer.ggml.seperator_token_id";  // sic: llama.cpp's spelling
  if (type == "pad") return "tokenizer.ggml.padding_token_id";
  if (type == "mask") return "tokenizer.ggml.mask_token_id";
  if (type == "eot") return "tokenizer.ggml.eot_token_id";
  return nullptr;
}

const char* add_key(const std::string& type) {
  if (type == "bos") return "tokenizer.ggml.add_bos_token";
  if (type == "eos") return "tokenizer.ggml.add_eos_token";
  return nullptr;
}

// Pairs of a tokenizer.json "merges" list: strings "a b", or (since
// tokenizers 0.20) two-string lists, whose spaces are written as U+0120 as
// llama.cpp does.
std::vector<std::string> merges_of(const Json& list, const std::string& where) {
  std::vector<std::string> out;
  out.reserve(list.size());
  for (const Json& m : list) {
    if (m.is_string()) {
      out.push_back(m.get<std::string>());
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      std::string s;
      for (int side = 0; side < 2; ++side) {
        if (side == 1) s += ' ';
        for (char c : m[side].get<std::string>()) {
          if (c == ' ') {
            s += "\xc4\xa0";  // U+0120
          } else {
            s += c;
          }
        }
      }
      out.push_back(std::move(s));
    } else {
      throw ModelError(where + ": model.merges holds an entry that is neither \"a b\" nor [\"a\", \"b\"]");
    }
  }
  return out;
}

std::vector<std::string> merges_txt(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  std::string line;
  bool first = true;
  while (std::getline(in, line)) {
    if (first && line.rfind("#", 0) == 0) {
      first = false;
      continue;
    }
    first = false;
    std::istringstream ss(line);
    std::string a, b, extra;
    if (!(ss >> a >> b) || (ss >> extra)) continue;  // malformed lines are skipped, as llama.cpp does
    out.push_back(a + " " + b);
  }
  return out;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (ss.str().size() > kMaxTemplateBytes) throw IoError(path, "larger than 16 MiB");
  return ss.str();
}

}  // namespace

void SpecialVocab::set_id(const std::string& type, int64_t id, int64_t n_vocab, std::vector<std::string>& notes) {
  if (this->id(type)) return;
  if (id < 0 || id >= n_vocab) {
    notes.push_back("special token " + type + " id " + std::to_string(id) + " is outside the vocabulary (" +
                    std::to_string(n_vocab) + " tokens): skipped");
    return;
  }
  ids.emplace_back(type, id);
}

std::optional<int64_t> SpecialVocab::id(const std::string& type) const {
  for (const auto& [t, v] : ids) {
    if (t == type) return v;
  }
  return std::nullopt;
}

void SpecialVocab::write(VocabKeys& out) const {
  if (!merges.empty()) {
    std::vector<gguf::Value> items;
    items.reserve(merges.size());
    for (const std::string& m : merges) items.push_back(gguf::Value::string(m));
    out.set("tokenizer.ggml.merges", gguf::Value::array(gguf::ValueType::STRING, std::move(items)));
  }
  for (const auto& [type, id] : ids) {
    if (const char* key = id_key(type)) out.set(key, gguf::Value::u32(static_cast<uint32_t>(id)));
  }
  for (const auto& [type, on] : add) {
    if (const char* key = add_key(type)) out.set(key, gguf::Value::boolean(on));
  }
  if (!chat_template) return;
  if (chat_template->is_string()) {
    out.set("tokenizer.chat_template", gguf::Value::string(chat_template->get<std::string>()));
    return;
  }
  // A list of named templates: "default" becomes tokenizer.chat_template, the
  // others tokenizer.chat_template.<name> (name reduced to [A-Za-z0-9_]).
  std::vector<gguf::Value> names;
  for (const Json& choice : *chat_template) {
    if (!choice.is_object()) continue;
    const auto n = choice.find("name"), t = choice.find("template");
    if (n == choice.end() || t == choice.end() || !n->is_string() || !t->is_string()) continue;
    std::string name = n->get<std::string>();
    for (char& c : name) {
      if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    }
    if (name.empty()) continue;
    if (name == "default") {
      out.set("tokenizer.chat_template", gguf::Value::string(t->get<std::string>()));
    } else {
      out.set("tokenizer.chat_template." + name, gguf::Value::string(t->get<std::string>()));
      names.push_back(gguf::Value::string(name));
    }
  }
  if (!names.empty()) out.set("tokenizer.chat_templates", gguf::Value::array(gguf::ValueType::STRING, names));
}

SpecialVocab load_special_vocab(const HfFiles& f, int64_t n_vocab, bool load_merges, std::vector<std::string>& notes) {
  SpecialVocab sv;
  const Json empty = Json::array();
  const Json* added = &empty;
  if (f.tokenizer) {
    const std::string where = f.path("tokenizer.json");
    if (load_merges) {
      const Json* model = json_object(*f.tokenizer, "model", where);
      if (model != nullptr && model->contains("merges") && (*model)["merges"].is_array()) {
        sv.merges = merges_of((*model)["merges"], where);
      }
    }
    const auto it = f.tokenizer->find("added_tokens");
    if (it != f.tokenizer->end() && it->is_array()) added = &*it;
  }
  if (load_merges && sv.merges.empty() && f.has("merges.txt")) sv.merges = merges_txt(f.path("merges.txt"));

  if (f.tokenizer_config) {
    const Json& tc = *f.tokenizer_config;
    const std::string where = f.path("tokenizer_config.json");
    if (tc.contains("chat_template")) {
      const Json& t = tc["chat_template"];
      if (t.is_string() || t.is_array()) {
        sv.chat_template = t;
      } else if (!t.is_null()) {
        notes.push_back(where + ": chat_template is neither a string nor a list: ignored");
      }
    }
    for (const char* type : kTypes) {
      const std::string t(type);
      if (const auto it = tc.find("add_" + t + "_token"); it != tc.end() && it->is_boolean()) {
        sv.add.emplace_back(t, it->get<bool>());
      }
      const auto e = tc.find(t + "_token");
      if (e == tc.end()) continue;
      std::string content;
      if (e->is_string()) {
        content = e->get<std::string>();
      } else if (e->is_object() && e->contains("content") && (*e)["content"].is_string()) {
        content = (*e)["content"].get<std::string>();
      } else {
        continue;
      }
      for (const Json& a : *added) {
        if (a.is_object() && a.value("content", std::string()) == content && a.contains("id") &&
            a["id"].is_number_integer()) {
          sv.set_id(t, a["id"].get<int64_t>(), n_vocab, notes);
          break;
        }
      }
    }
  }
  // transformers 4.43+ may keep the template in its own file.
  if (!sv.chat_template && f.has("chat_template.jinja")) {
    sv.chat_template = Json(read_text(f.path("chat_template.jinja")));
  }
  for (const char* type : kTypes) {
    const std::string key = std::string(type) + "_token_id";
    const auto it = f.config.find(key);
    if (it != f.config.end() && it->is_number_integer()) sv.set_id(type, it->get<int64_t>(), n_vocab, notes);
  }
  if (f.generation_config) {
    for (const char* type : {"bos", "eos"}) {
      const auto it = f.generation_config->find(std::string(type) + "_token_id");
      if (it == f.generation_config->end()) continue;
      if (it->is_number_integer()) {
        sv.set_id(type, it->get<int64_t>(), n_vocab, notes);
      } else if (it->is_array() && !it->empty() && (*it)[0].is_number_integer()) {
        sv.set_id(type, (*it)[0].get<int64_t>(), n_vocab, notes);
      }
    }
  }
  return sv;
}

}  // namespace ferrite::convert
