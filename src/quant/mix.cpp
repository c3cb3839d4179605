#include "quant/mix.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <string>

#include "core/error.h"
#include "gguf/metadata.h"

namespace ferrite::quant {
namespace {

using T = TensorType;

// llama_ftype values stored in general.file_type.
enum Ftype : uint32_t {
  kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_1 = 3, kQ8_0 = 7, kQ5_0 = 8, kQ5_1 = 9, kQ2_K = 10, kQ3_K_S = 11,
  kQ3_K_M = 12, kQ3_K_L = 13, kQ4_K_S = 14, kQ4_K_M = 15, kQ5_K_S = 16, kQ5_K_M = 17, kQ6_K = 18,
  kIQ2_XXS = 19, kIQ2_XS = 20, kQ2_K_S = 21, kIQ3_XS = 22, kIQ3_XXS = 23, kIQ1_S = 24, kIQ4_NL = 25,
  kIQ3_S = 26, kIQ3_M = 27, kIQ2_S = 28, kIQ2_M = 29, kIQ4_XS = 30, kIQ1_M = 31, kBF16 = 32, kTQ1_0 = 36,
  kTQ2_0 = 37,
  kMXFP4 = 38,  // ik_llama.cpp's MOSTLY_MXFP4 and today's llama.cpp's MOSTLY_MXFP4_MOE share the number
};

const std::vector<Preset> kPresets = {
    {"F32", kF32, T::F32},          {"F16", kF16, T::F16},          {"BF16", kBF16, T::BF16},
    {"Q4_0", kQ4_0, T::Q4_0},       {"Q4_1", kQ4_1, T::Q4_1},       {"Q5_0", kQ5_0, T::Q5_0},
    {"Q5_1", kQ5_1, T::Q5_1},       {"Q8_0", kQ8_0, T::Q8_0},       {"Q2_K", kQ2_K, T::Q2_K},
    {"Q2_K_S", kQ2_K_S, T::Q2_K},   {"Q3_K_S", kQ3_K_S, T::Q3_K},   {"Q3_K_M", kQ3_K_M, T::Q3_K},
    {"Q3_K_L", kQ3_K_L, T::Q3_K},   {"Q4_K_S", kQ4_K_S, T::Q4_K},   {"Q4_K_M", kQ4_K_M, T::Q4_K},
    {"Q5_K_S", kQ5_K_S, T::Q5_K},   {"Q5_K_M", kQ5_K_M, T::Q5_K},   {"Q6_K", kQ6_K, T::Q6_K},
    {"IQ1_S", kIQ1_S, T::IQ1_S},    {"IQ1_M", kIQ1_M, T::IQ1_M},    {"IQ2_XXS", kIQ2_XXS, T::IQ2_XXS},
    {"IQ2_XS", kIQ2_XS, T::IQ2_XS}, {"IQ2_S", kIQ2_S, T::IQ2_XS},   {"IQ2_M", kIQ2_M, T::IQ2_S},
    {"IQ3_XXS", kIQ3_XXS, T::IQ3_XXS}, {"IQ3_XS", kIQ3_XS, T::IQ3_S}, {"IQ3_S", kIQ3_S, T::IQ3_S},
    {"IQ3_M", kIQ3_M, T::IQ3_S},    {"IQ4_NL", kIQ4_NL, T::IQ4_NL}, {"IQ4_XS", kIQ4_XS, T::IQ4_XS},
    {"TQ1_0", kTQ1_0, T::TQ1_0},    {"TQ2_0", kTQ2_0, T::TQ2_0},
    {"MXFP4", kMXFP4, T::MXFP4},    {"MXFP4_MOE", kMXFP4, T::MXFP4},
};

// MXFP4_MOE (llama.cpp's gpt-oss recipe): expert stacks (a third dimension
// over 1) in MXFP4, every other quantizable weight in Q8_0; no other rule.
bool moe_recipe(const Preset& p) { return std::string_view(p.name) == "MXFP4_MOE"; }
TensorType moe_recipe_type(const gguf::TensorInfo& t) {
  return t.n_dims >= 3 && t.ne[2] > 1 ? T::MXFP4 : T::Q8_0;
}

bool iequal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

enum class Category { kTokenEmbd, kAttnQ, kAttnV, kAttnK, kAttnQkv, kAttnKvB, kAttnOutput, kFfnUp, kFfnGate, kFfnDown, kOutput, kOther };

Category category_of(const std::string& name) {
  if (name == "output.weight") return Category::kOutput;
  if (name == "token_embd.weight" || name == "per_layer_token_embd.weight") return Category::kTokenEmbd;
  if (contains(name, "attn_qkv.weight")) return Category::kAttnQkv;
  if (contains(name, "attn_kv_b.weight")) return Category::kAttnKvB;
  if (contains(name, "attn_v.weight")) return Category::kAttnV;
  if (contains(name, "attn_k.weight")) return Category::kAttnK;
  if (contains(name, "attn_q.weight")) return Category::kAttnQ;
  if (contains(name, "attn_output.weight")) return Category::kAttnOutput;
  if (contains(name, "ffn_up")) return Category::kFfnUp;
  if (contains(name, "ffn_gate")) return Category::kFfnGate;
  if (contains(name, "ffn_down")) return Category::kFfnDown;
  return Category::kOther;
}

bool is_attn_v_like(Category c) { return c == Category::kAttnV || c == Category::kAttnQkv || c == Category::kAttnKvB; }

// "Use more bits" layers: the first and last eighth and every third between.
bool use_more_bits(int64_t i, int64_t n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

// Layer index from "blk.N." (for MoE models), else the running counter.
int64_t layer_of(const std::string& name, int64_t counter, const MixModel& m) {
  if (m.n_expert > 1) {
    int layer = -1;
    if (std::sscanf(name.c_str(), "blk.%d.", &layer) == 1 && layer >= 0) return layer;
  }
  return counter;
}

struct Counters {
  int64_t n_attn_v = 0, n_ffn_down = 0, n_ffn_gate = 0, n_ffn_up = 0;
  int64_t i_attn_v = 0, i_ffn_down = 0, i_ffn_gate = 0, i_ffn_up = 0;
};

// The type rules (llama.cpp's llama_tensor_get_type), for a quantizable
// tensor whose default type is `t`.
TensorType rule_type(TensorType t, const gguf::TensorInfo& tensor, uint32_t f, Category cat, const MixModel& m,
                     bool tied, bool has_imatrix, Counters& c) {
  const int64_t n_gqa = m.n_head_kv > 0 ? m.n_head / m.n_head_kv : 1;
  const bool falcon = m.arch == "falcon";
  const bool iq_low = f == kIQ2_XXS || f == kIQ2_XS || f == kIQ1_S || f == kIQ2_S || f == kIQ2_M || f == kIQ1_M;
  if (cat == Category::kOutput || (tied && cat == Category::kTokenEmbd)) {
    const TensorTypeInfo* info = tensor_type_info(t);
    if (falcon || tensor.ne[0] % info->block_size != 0) return T::Q8_0;
    if (f == kIQ2_XXS || f == kIQ2_XS || f == kIQ3_XXS || f == kIQ1_S || f == kIQ2_S || f == kIQ2_M || f == kIQ1_M) {
      return T::Q5_K;
    }
    return t != T::Q8_0 ? T::Q6_K : t;
  }
  if (cat == Category::kTokenEmbd) {
    if (f == kIQ2_XXS || f == kIQ2_XS || f == kIQ1_S || f == kIQ1_M) return T::Q2_K;
    if (f == kIQ2_S || f == kIQ2_M || f == kIQ3_XXS) return T::IQ3_S;
    if (f == kTQ1_0 || f == kTQ2_0) return T::Q4_K;
    return t;
  }
  if (iq_low) {
    const TensorType iq3_or_q2 = (f == kIQ2_S || f == kIQ2_M) ? T::IQ3_S : T::Q2_K;
    if (is_attn_v_like(cat)) {
      ++c.i_attn_v;
      return (n_gqa >= 4 || m.n_expert >= 4) ? T::Q4_K : iq3_or_q2;
    }
    if (m.n_expert == 8 && cat == Category::kAttnK) return T::Q4_K;
    if (cat == Category::kFfnDown) {
      const bool low = c.i_ffn_down < c.n_ffn_down / 8;
      ++c.i_ffn_down;
      return low ? iq3_or_q2 : t;
    }
    if (cat == Category::kAttnOutput) {
      if (m.n_expert == 8) return T::Q5_K;
      if (f == kIQ1_S || f == kIQ1_M) return T::IQ2_XXS;
      if (f == kIQ2_S || f == kIQ2_M) return T::IQ3_S;
    }
    return t;
  }
  if (is_attn_v_like(cat)) {
    TensorType r = t;
    if (f == kQ2_K) r = n_gqa >= 4 ? T::Q4_K : T::Q3_K;
    else if (f == kQ2_K_S && n_gqa >= 4) r = T::Q4_K;
    else if (f == kIQ3_XXS) r = n_gqa >= 4 ? T::Q4_K : !has_imatrix ? T::IQ3_S : T::IQ3_XXS;
    else if ((f == kIQ3_XS || f == kIQ3_S) && n_gqa >= 4) r = T::Q4_K;
    else if (f == kIQ3_M) r = T::Q4_K;
    else if (f == kQ3_K_M) r = c.i_attn_v < 2 ? T::Q5_K : T::Q4_K;
    else if (f == kQ3_K_L) r = T::Q5_K;
    else if ((f == kIQ4_NL || f == kIQ4_XS) && n_gqa >= 4) r = T::Q5_K;
    else if ((f == kQ4_K_M || f == kQ5_K_M) && use_more_bits(c.i_attn_v, c.n_attn_v)) r = T::Q6_K;
    else if (f == kQ4_K_S && c.i_attn_v < 4) r = T::Q5_K;
    if (m.n_expert == 8) r = T::Q8_0;
    ++c.i_attn_v;
    return r;
  }
  if (cat == Category::kAttnK) {
    if (m.n_expert == 8) return T::Q8_0;
    if (f == kIQ3_XS) return T::IQ3_XXS;
    if (f == kIQ3_XXS) return T::IQ2_S;
    return t;
  }
  if (cat == Category::kAttnQ) {
    if (f == kIQ3_XS) return T::IQ3_XXS;
    if (f == kIQ3_XXS) return T::IQ2_S;
    return t;
  }
  if (cat == Category::kFfnDown) {
    const int64_t i = layer_of(tensor.name, c.i_ffn_down, m);
    const int64_t n = m.n_expert > 1 ? m.n_layer : c.n_ffn_down;
    TensorType r = t;
    if (f == kQ2_K) r = T::Q3_K;
    else if (f == kQ2_K_S) { if (i < n / 8) r = T::Q4_K; }
    else if (f == kIQ3_XXS && !has_imatrix) r = i < n / 8 ? T::Q4_K : T::Q3_K;
    else if (f == kQ3_K_M) r = i < n / 16 ? T::Q5_K : (!falcon || use_more_bits(i, n)) ? T::Q4_K : T::Q3_K;
    else if (f == kIQ3_M && (i < n / 8 || (m.n_expert == 8 && use_more_bits(i, n)))) r = T::Q4_K;
    else if (f == kQ3_K_L) r = falcon ? T::Q4_K : T::Q5_K;
    else if (f == kQ4_K_M) {
      if (falcon) r = i < n / 16 ? T::Q6_K : use_more_bits(i, n) ? T::Q5_K : T::Q4_K;
      else if (use_more_bits(i, n)) r = T::Q6_K;
    } else if (i < n / 8 && (f == kIQ4_NL || f == kIQ4_XS) && !has_imatrix) r = T::Q5_K;
    else if (f == kQ5_K_M && use_more_bits(i, n)) r = T::Q6_K;
    else if (f == kQ4_K_S && !falcon && i < n / 8) r = T::Q5_K;
    else if ((f == kQ4_0 || f == kQ5_0) && has_imatrix && i < n / 8) r = f == kQ4_0 ? T::Q4_1 : T::Q5_1;
    ++c.i_ffn_down;
    return r;
  }
  if (cat == Category::kAttnOutput) {
    if (!falcon) {
      if (m.n_expert == 8) {
        if (f == kQ2_K || f == kIQ3_XS || f == kIQ3_XXS || f == kQ3_K_S || f == kQ3_K_M || f == kIQ4_NL ||
            f == kQ4_K_S || f == kQ4_K_M || f == kIQ3_S || f == kIQ3_M || f == kIQ4_XS) {
          return T::Q5_K;
        }
      } else {
        if (f == kQ2_K) return T::Q3_K;
        if (f == kIQ3_XXS) return T::IQ3_S;
        if (f == kQ3_K_M) return T::Q4_K;
        if (f == kQ3_K_L) return T::Q5_K;
        if (f == kIQ3_M) return T::Q4_K;
      }
    } else if (f == kQ3_K_L) {
      return T::Q4_K;
    }
    return t;
  }
  if (cat == Category::kAttnQkv) {
    if (f == kQ3_K_M || f == kQ3_K_L || f == kIQ3_M) return T::Q4_K;
    if (f == kQ4_K_M) return T::Q5_K;
    if (f == kQ5_K_M) return T::Q6_K;
    return t;
  }
  if (cat == Category::kFfnGate || cat == Category::kFfnUp) {
    int64_t& counter = cat == Category::kFfnGate ? c.i_ffn_gate : c.i_ffn_up;
    const int64_t n = m.n_expert > 1 ? m.n_layer : (cat == Category::kFfnGate ? c.n_ffn_gate : c.n_ffn_up);
    const int64_t i = layer_of(tensor.name, counter, m);
    ++counter;
    if (f == kIQ3_XS && i >= n / 8 && i < 7 * n / 8) return T::IQ3_XXS;
    return t;
  }
  return t;
}

// A type whose block does not divide the row length falls back (llama.cpp's table as of c392e50: Q2_K and
// Q3_K go to IQ4_NL with the IQ types, not Q4_0).
TensorType fallback(TensorType t, int64_t ncols) {
  const TensorTypeInfo* info = tensor_type_info(t);
  if (ncols % info->block_size == 0) return t;
  TensorType r;
  switch (t) {
    case T::IQ1_S: case T::IQ1_M: case T::IQ2_XXS: case T::IQ2_XS: case T::IQ2_S: case T::IQ3_XXS:
    case T::IQ3_S: case T::IQ4_XS: case T::Q2_K: case T::Q3_K: r = T::IQ4_NL; break;
    case T::TQ1_0: case T::TQ2_0: r = T::Q4_0; break;
    case T::Q4_K: r = T::Q5_0; break;
    case T::Q5_K: r = T::Q5_1; break;
    case T::Q6_K: r = T::Q8_0; break;
    default: throw InvalidArgument("no fallback type for " + tensor_type_name(t) + " with " + std::to_string(ncols) + " columns");
  }
  return ncols % tensor_type_info(r)->block_size == 0 ? r : T::F16;
}

}  // namespace

const std::vector<Preset>& presets() { return kPresets; }

// llama.cpp's quantize also accepts the K-quant family names without a size
// suffix (meaning the _M mix) and the numeric file type.
struct PresetAlias {
  const char* alias;
  const char* preset;
};
constexpr PresetAlias kPresetAliases[] = {{"Q3_K", "Q3_K_M"}, {"Q4_K", "Q4_K_M"}, {"Q5_K", "Q5_K_M"}};

const Preset* find_preset(std::string_view name) {
  for (const PresetAlias& a : kPresetAliases) {
    if (iequal(a.alias, name)) name = a.preset;
  }
  const bool numeric = !name.empty() && name.size() <= 3 &&
                       std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; });
  for (const Preset& p : kPresets) {
    if (iequal(p.name, name)) return &p;
    if (numeric && std::to_string(p.file_type) == name) return &p;
  }
  return nullptr;
}

MixModel MixModel::from_file(const gguf::File& file) {
  const gguf::HParamsSummary s = gguf::summarize(file);
  MixModel m;
  m.arch = s.architecture;
  m.n_head = static_cast<int64_t>(s.head_count.value_or(1));
  m.n_head_kv = static_cast<int64_t>(s.head_count_kv.value_or(static_cast<uint64_t>(m.n_head)));
  m.n_expert = static_cast<int64_t>(s.expert_count.value_or(0));
  m.n_layer = static_cast<int64_t>(s.block_count.value_or(1));
  return m;
}

bool tensor_is_quantizable(const gguf::TensorInfo& t) {
  if (t.n_dims < 2) return false;
  const std::string& n = t.name;
  if (n.size() < 6 || n.compare(n.size() - 6, 6, "weight") != 0) return false;
  for (const char* skip : {"_norm.weight", "ffn_gate_inp.weight", "altup", "laurel", "per_layer_model_proj",
                           "ssm_conv1d", "attn_rel_b.weight", "time_mix_first.weight",
                           // RWKV's LoRAs and stacked lerps stay as they are (llama.cpp's list)
                           "time_mix_w1.weight", "time_mix_w2.weight", "time_mix_decay_w1.weight",
                           "time_mix_decay_w2.weight", "time_mix_lerp_fused.weight"}) {
    if (contains(n, skip)) return false;
  }
  return n != "position_embd.weight" && n != "token_types.weight";
}

std::vector<TensorType> plan_mix(const gguf::File& file, const Preset& preset, const MixOptions& options) {
  return plan_mix(file.tensors(), MixModel::from_file(file), preset, options);
}

std::vector<TensorType> plan_mix(const std::vector<gguf::TensorInfo>& tensors, const MixModel& model,
                                 const Preset& preset, const MixOptions& options) {
  Counters c;
  bool tied = true;
  for (const auto& t : tensors) {
    const Category cat = category_of(t.name);
    if (cat == Category::kOutput) tied = false;
    if (is_attn_v_like(cat)) ++c.n_attn_v;
    if (cat == Category::kFfnDown) ++c.n_ffn_down;
    if (cat == Category::kFfnGate) ++c.n_ffn_gate;
    if (cat == Category::kFfnUp) ++c.n_ffn_up;
  }
  std::vector<TensorType> out;
  out.reserve(tensors.size());
  for (const auto& t : tensors) {
    if (!tensor_is_quantizable(t)) {
      out.push_back(t.type);
      continue;
    }
    TensorType type = preset.base;
    const TensorTypeInfo* base_info = tensor_type_info(type);
    if (base_info->quantized) {
      bool manual = false;
      for (const auto& [re, forced] : options.overrides) {
        if (std::regex_search(t.name, re)) {
          type = forced;
          manual = true;
          break;
        }
      }
      if (!manual && !options.pure && moe_recipe(preset)) {
        type = moe_recipe_type(t);
      } else if (!manual && !options.pure) {
        type = rule_type(type, t, preset.file_type, category_of(t.name), model, tied, options.has_imatrix, c);
      }
      type = fallback(type, t.ne[0]);
    }
    out.push_back(type);
  }
  return out;
}

}  // namespace ferrite::quant
