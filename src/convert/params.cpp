#include <cmath>
#include <limits>

#include "convert/arch.h"
#include "core/error.h"

namespace ferrite::convert {
namespace {

constexpr int64_t kMaxCount = int64_t{1} << 31;

std::string key_list(std::initializer_list<const char*> keys) {
  std::string s;
  for (const char* k : keys) s += (s.empty() ? "" : " or ") + std::string(k);
  return s;
}

}  // namespace

int64_t Dims::get(Dim d) const {
  switch (d) {
    case Dim::One: return 1;
    case Dim::Vocab: return vocab;
    case Dim::Embd: return embd;
    case Dim::Q: return n_head * head_dim;
    case Dim::KV: return n_head_kv * head_dim;
    case Dim::HeadDim: return head_dim;
    case Dim::QKV: return (n_head + 2 * n_head_kv) * head_dim;
    case Dim::FF: return ff;
    case Dim::FF2: return 2 * ff;
    case Dim::Experts: return experts;
    case Dim::FFExp: return ff_exp;
    case Dim::FFShexp: return ff_shexp;
    case Dim::Pos: return pos;
    case Dim::Types: return types;
    default: return 0;
  }
}

std::string Dims::describe(Dim d) const {
  const std::string v = std::to_string(get(d));
  switch (d) {
    case Dim::One: return "1";
    case Dim::Vocab: return "vocab_size " + v;
    case Dim::Embd: return "hidden_size " + v;
    case Dim::Q: return "heads x head_dim = " + v;
    case Dim::KV: return "kv heads x head_dim = " + v;
    case Dim::HeadDim: return "head_dim " + v;
    case Dim::QKV: return "(heads + 2 kv heads) x head_dim = " + v;
    case Dim::FF: return "intermediate_size " + v;
    case Dim::FF2: return "2 x intermediate_size = " + v;
    case Dim::Experts: return "experts " + v;
    case Dim::FFExp: return "expert intermediate size " + v;
    case Dim::FFShexp: return "shared expert intermediate size " + v;
    case Dim::Pos: return "positions " + v;
    case Dim::Types: return "token types " + v;
    default: return "any";
  }
}

std::optional<int64_t> Params::opt_int(std::initializer_list<const char*> keys) const {
  for (const char* k : keys) {
    if (auto v = json_int(f_.config, k, config_path_)) {
      if (*v < 0 || *v >= kMaxCount) {
        throw ModelError(config_path_ + ": " + k + " = " + std::to_string(*v) + " is out of range");
      }
      return v;
    }
  }
  return std::nullopt;
}

int64_t Params::req_int(std::initializer_list<const char*> keys) const {
  if (auto v = opt_int(keys)) return *v;
  throw ModelError(config_path_ + ": " + key_list(keys) + " is missing (needed for " + arch_ + ")");
}

std::optional<double> Params::opt_float(std::initializer_list<const char*> keys) const {
  for (const char* k : keys) {
    if (auto v = json_number(f_.config, k, config_path_)) {
      if (!std::isfinite(*v)) throw ModelError(config_path_ + ": " + k + " is not finite");
      return v;
    }
  }
  return std::nullopt;
}

double Params::req_float(std::initializer_list<const char*> keys) const {
  if (auto v = opt_float(keys)) return *v;
  throw ModelError(config_path_ + ": " + key_list(keys) + " is missing (needed for " + arch_ + ")");
}

std::optional<bool> Params::opt_bool(std::initializer_list<const char*> keys) const {
  for (const char* k : keys) {
    if (auto v = json_bool(f_.config, k, config_path_)) return v;
  }
  return std::nullopt;
}

std::optional<double> Params::rope_theta() const {
  if (auto t = opt_float({"rope_theta"})) return t;
  if (const Json* rp = json_object(f_.config, "rope_parameters", config_path_)) {
    return json_number(*rp, "rope_theta", config_path_ + " rope_parameters");
  }
  return std::nullopt;
}

const Json* Params::rope_scaling() const {
  if (const Json* rs = json_object(f_.config, "rope_scaling", config_path_)) return rs;
  if (const Json* rp = json_object(f_.config, "rope_parameters", config_path_)) {
    const std::string type = rp->value("rope_type", rp->value("type", std::string("default")));
    if (type != "default") return rp;
  }
  return nullptr;
}

void Params::u32(const std::string& suffix, int64_t v) {
  if (v < 0 || v > std::numeric_limits<uint32_t>::max()) {
    throw ModelError(config_path_ + ": " + arch_ + "." + suffix + " = " + std::to_string(v) + " is out of range");
  }
  set_key(arch_ + "." + suffix, gguf::Value::u32(static_cast<uint32_t>(v)));
}

void Params::f32(const std::string& suffix, double v) {
  set_key(arch_ + "." + suffix, gguf::Value::f32(static_cast<float>(v)));
}

void Params::boolean(const std::string& suffix, bool v) { set_key(arch_ + "." + suffix, gguf::Value::boolean(v)); }

void Params::str(const std::string& suffix, const std::string& v) {
  set_key(arch_ + "." + suffix, gguf::Value::string(v));
}

void Params::set_key(const std::string& key, gguf::Value v) { set_kv(kvs, key, std::move(v)); }

void base_params(Params& p) {
  p.u32("block_count", p.req_int({"n_layers", "num_hidden_layers", "n_layer", "num_layers"}));
  if (auto v = p.opt_int({"max_position_embeddings", "n_ctx"})) p.u32("context_length", *v);
  if (auto v = p.opt_int({"hidden_size", "n_embd"})) p.u32("embedding_length", *v);
  if (auto v = p.opt_int({"intermediate_size", "n_inner"})) p.u32("feed_forward_length", *v);
  if (auto v = p.opt_int({"num_attention_heads", "n_head"})) p.u32("attention.head_count", *v);
  if (auto v = p.opt_int({"num_key_value_heads"})) p.u32("attention.head_count_kv", *v);
  if (auto v = p.rope_theta()) p.f32("rope.freq_base", *v);
  if (auto v = p.opt_float({"rms_norm_eps"})) p.f32("attention.layer_norm_rms_epsilon", *v);
  if (auto v = p.opt_float({"layer_norm_eps", "layer_norm_epsilon", "norm_epsilon"})) {
    p.f32("attention.layer_norm_epsilon", *v);
  }
  if (auto v = p.opt_int({"num_local_experts"})) p.u32("expert_count", *v);
  if (auto v = p.opt_int({"num_experts_per_tok"})) p.u32("expert_used_count", *v);
  if (auto v = p.opt_int({"head_dim"})) {
    p.u32("attention.key_length", *v);
    p.u32("attention.value_length", *v);
  }
}

void decoder_dims(Params& p) {
  Dims& d = p.dims;
  d.n_layer = p.req_int({"n_layers", "num_hidden_layers", "n_layer", "num_layers"});
  d.vocab = p.opt_int({"vocab_size"}).value_or(0);
  d.embd = p.req_int({"hidden_size", "n_embd"});
  d.n_head = p.req_int({"num_attention_heads", "n_head"});
  if (d.n_head == 0) throw ModelError(p.config_path() + ": num_attention_heads is 0");
  d.n_head_kv = p.opt_int({"num_key_value_heads"}).value_or(d.n_head);
  if (d.n_head_kv == 0 || d.n_head % d.n_head_kv != 0) {
    throw ModelError(p.config_path() + ": num_attention_heads " + std::to_string(d.n_head) +
                     " is not a multiple of num_key_value_heads " + std::to_string(d.n_head_kv));
  }
  if (!p.opt_int({"head_dim"}) && d.embd % d.n_head != 0) {
    throw ModelError(p.config_path() + ": hidden_size " + std::to_string(d.embd) +
                     " is not a multiple of num_attention_heads " + std::to_string(d.n_head));
  }
  d.head_dim = p.opt_int({"head_dim"}).value_or(d.embd / d.n_head);
  if (d.head_dim == 0) throw ModelError(p.config_path() + ": head_dim is 0");
  d.ff = p.opt_int({"intermediate_size", "n_inner"}).value_or(0);
  d.experts = p.opt_int({"num_local_experts", "num_experts"}).value_or(0);
  d.ff_exp = p.opt_int({"moe_intermediate_size"}).value_or(d.ff);
  d.ff_shexp = p.opt_int({"shared_expert_intermediate_size"}).value_or(0);
}

}  // namespace ferrite::convert

namespace ferrite::convert {

bool drop_mtp_layers(const std::string& name, const Params& p) {
  static constexpr std::string_view kPrefix = "model.layers.";
  if (name.rfind(kPrefix, 0) != 0) return false;
  int64_t layer = 0;
  size_t i = kPrefix.size();
  if (i >= name.size() || name[i] < '0' || name[i] > '9') return false;
  for (; i < name.size() && name[i] >= '0' && name[i] <= '9' && layer < (int64_t{1} << 40); ++i) {
    layer = layer * 10 + (name[i] - '0');
  }
  return layer >= p.dims.n_layer;
}

void require_no_rope_every(const Params& p, int64_t step) {
  const Json& c = p.files().config;
  if (c.contains("no_rope_layers") && c["no_rope_layers"].is_array()) {
    const Json& v = c["no_rope_layers"];
    for (size_t i = 0; i < v.size(); ++i) {
      const bool rope = v[i].is_number_integer() && v[i].get<int64_t>() != 0;
      if (rope != ((static_cast<int64_t>(i) + 1) % step != 0)) {
        throw ModelError(p.config_path() + ": no_rope_layers is not every " + std::to_string(step) +
                         "th layer without RoPE");
      }
    }
  } else if (p.opt_int({"no_rope_layer_interval"}).value_or(step) != step) {
    throw ModelError(p.config_path() + ": no_rope_layer_interval other than " + std::to_string(step) +
                     " is not supported");
  }
}

}  // namespace ferrite::convert
