#include "gguf/metadata.h"

#include <filesystem>

#include "core/error.h"

namespace ferrite::gguf {

void Metadata::wrong(std::string_view key, const std::string& why) const {
  throw ModelError(file_.path() + ": metadata key '" + std::string(key) + "': " + why);
}

std::string Metadata::architecture() const { return get_string("general.architecture"); }

std::string Metadata::name() const {
  if (auto n = opt_string("general.name")) return *n;
  return std::filesystem::path(file_.path()).filename().string();
}

std::string Metadata::arch_key(std::string_view suffix) const { return architecture() + "." + std::string(suffix); }

#define FERRITE_META_GETTER(RET, NAME, EXPR)                        \
  std::optional<RET> Metadata::opt_##NAME(std::string_view key) const { \
    const Value* v = file_.find(key);                               \
    if (!v) return std::nullopt;                                    \
    try {                                                           \
      return EXPR;                                                  \
    } catch (const ModelError& e) {                                 \
      wrong(key, e.what());                                         \
    }                                                               \
  }                                                                 \
  RET Metadata::get_##NAME(std::string_view key) const {            \
    auto v = opt_##NAME(key);                                       \
    if (!v) wrong(key, "required but missing");                     \
    return *v;                                                      \
  }

FERRITE_META_GETTER(uint64_t, uint, v->as_uint())
FERRITE_META_GETTER(int64_t, int, v->as_int())
FERRITE_META_GETTER(float, float, v->as_float())
FERRITE_META_GETTER(bool, bool, v->as_bool())
FERRITE_META_GETTER(std::string, string, v->as_string())
#undef FERRITE_META_GETTER

std::vector<std::string> Metadata::string_array(std::string_view key) const {
  std::vector<std::string> out;
  const Value* v = file_.find(key);
  if (!v) return out;
  try {
    out.reserve(v->items().size());
    for (const auto& item : v->items()) out.push_back(item.as_string());
  } catch (const ModelError& e) {
    wrong(key, e.what());
  }
  return out;
}

std::vector<float> Metadata::float_array(std::string_view key) const {
  std::vector<float> out;
  const Value* v = file_.find(key);
  if (!v) return out;
  try {
    out.reserve(v->items().size());
    for (const auto& item : v->items()) out.push_back(item.as_float());
  } catch (const ModelError& e) {
    wrong(key, e.what());
  }
  return out;
}

std::vector<int64_t> Metadata::int_array(std::string_view key) const {
  std::vector<int64_t> out;
  const Value* v = file_.find(key);
  if (!v) return out;
  try {
    out.reserve(v->items().size());
    for (const auto& item : v->items()) out.push_back(item.as_int());
  } catch (const ModelError& e) {
    wrong(key, e.what());
  }
  return out;
}

std::vector<uint64_t> Metadata::per_layer_uint(std::string_view key, uint64_t n_layer) const {
  const Value* v = file_.find(key);
  if (!v) wrong(key, "required but missing");
  std::vector<uint64_t> out;
  try {
    if (v->is_array()) {
      if (v->items().size() != n_layer) {
        wrong(key, "has " + std::to_string(v->items().size()) + " values for " + std::to_string(n_layer) +
                       " layers");
      }
      for (const auto& item : v->items()) out.push_back(item.as_uint());
    } else {
      out.assign(static_cast<size_t>(n_layer), v->as_uint());
    }
  } catch (const ModelError& e) {
    wrong(key, e.what());
  }
  return out;
}

HParamsSummary summarize(const File& file) {
  Metadata m(file);
  HParamsSummary s;
  s.architecture = m.opt_string("general.architecture").value_or("");
  s.name = m.name();
  const std::string a = s.architecture;
  auto k = [&](const char* suffix) { return a + "." + suffix; };
  auto scalar_or_first = [&](const std::string& key) -> std::optional<uint64_t> {
    const Value* v = file.find(key);
    if (!v) return std::nullopt;
    if (v->is_array()) return v->items().empty() ? std::nullopt : std::optional<uint64_t>(v->items()[0].as_uint());
    return v->as_uint();
  };
  if (!a.empty()) {
    s.context_length = m.opt_uint(k("context_length"));
    s.embedding_length = m.opt_uint(k("embedding_length"));
    s.block_count = m.opt_uint(k("block_count"));
    s.feed_forward_length = scalar_or_first(k("feed_forward_length"));
    s.head_count = scalar_or_first(k("attention.head_count"));
    s.head_count_kv = scalar_or_first(k("attention.head_count_kv"));
    s.rope_dimension_count = m.opt_uint(k("rope.dimension_count"));
    s.rope_freq_base = m.opt_float(k("rope.freq_base"));
    s.norm_epsilon = m.opt_float(k("attention.layer_norm_rms_epsilon"));
    if (!s.norm_epsilon) s.norm_epsilon = m.opt_float(k("attention.layer_norm_epsilon"));
    s.expert_count = m.opt_uint(k("expert_count"));
    s.expert_used_count = m.opt_uint(k("expert_used_count"));
    s.vocab_size = m.opt_uint(k("vocab_size"));
  }
  s.tokenizer_model = m.opt_string("tokenizer.ggml.model");
  s.tokenizer_pre = m.opt_string("tokenizer.ggml.pre");
  if (const Value* t = file.find("tokenizer.ggml.tokens"); t && t->is_array()) s.n_tokens = t->items().size();
  s.bos_token_id = m.opt_int("tokenizer.ggml.bos_token_id");
  s.eos_token_id = m.opt_int("tokenizer.ggml.eos_token_id");
  s.has_chat_template = file.find("tokenizer.chat_template") != nullptr;
  return s;
}

}  // namespace ferrite::gguf
