#include "convert/lora_peft.h"

#include <cmath>
#include <filesystem>
#include <map>

#include "convert/arch.h"
#include "convert/json_file.h"
#include "convert/safetensors.h"
#include "convert/tensor_plan.h"
#include "core/error.h"
#include "gguf/file.h"
#include "gguf/metadata.h"

namespace ferrite::convert {
namespace {

constexpr uint64_t kMaxConfigBytes = 1u << 20;
const std::string kPrefix = "base_model.model.";

struct Config {
  double alpha = 0;
  int64_t r = 0;
  bool rslora = false;
};

Config read_config(const std::string& path) {
  const Json j = read_json_file(path, kMaxConfigBytes);
  if (!j.is_object()) throw ModelError(path + ": not a JSON object");
  Config c;
  const std::string peft = json_string(j, "peft_type", path).value_or("LORA");
  if (peft != "LORA") throw ModelError(path + ": peft_type is " + peft + ", not LORA");
  const auto alpha = json_number(j, "lora_alpha", path);
  if (!alpha) throw ModelError(path + ": lora_alpha is missing");
  c.alpha = *alpha;
  c.r = json_int(j, "r", path).value_or(0);
  c.rslora = json_bool(j, "use_rslora", path).value_or(false);
  for (const char* key : {"rank_pattern", "alpha_pattern"}) {
    const Json* p = json_object(j, key, path);
    if (p != nullptr && !p->empty()) {
      throw ModelError(path + ": " + key + " (per-module ranks or alphas) cannot be written as one adapter.lora.alpha");
    }
  }
  if (j.contains("modules_to_save") && j["modules_to_save"].is_array() && !j["modules_to_save"].empty()) {
    throw ModelError(path + ": modules_to_save (fully trained modules) is not a LoRA adapter's part");
  }
  return c;
}

// The GGUF name and rule of a PEFT tensor's base weight (HF name without the prefix and .lora_X).
const TensorRule& rule_of(const ArchDef& arch, const std::string& hf, const std::string& file, std::string& gguf) {
  const std::string name = arch.rename ? arch.rename(hf) : hf;
  const NameKey key = name_key(name);
  for (const TensorRule& r : arch.rules) {
    if (key.key != r.hf) continue;
    if (*r.gguf == '\0') throw ModelError(file + ": " + hf + " is a tensor the " + arch.gguf_arch + " GGUF drops");
    if (key.xid >= 0) throw ModelError(file + ": " + hf + ": adapters of experts are not supported");
    if (r.flags & (kNeoxQkv | kFalconQkv)) {
      throw ModelError(file + ": " + hf + ": adapters of a fused Q|K|V that the converter reorders are not supported");
    }
    gguf = with_bid(r.gguf, key.bid);
    return r;
  }
  throw ModelError(file + ": cannot map " + hf + " to a " + arch.gguf_arch + " GGUF tensor");
}

}  // namespace

LoraFile read_peft_lora(const std::string& dir, const std::string& base_gguf) {
  namespace fs = std::filesystem;
  const std::string cfg_path = (fs::path(dir) / "adapter_config.json").string();
  const std::string st_path = (fs::path(dir) / "adapter_model.safetensors").string();
  const Config cfg = read_config(cfg_path);
  const gguf::File base = gguf::File::open(base_gguf);
  const gguf::Metadata md(base);
  const std::string arch_name = md.architecture();
  const ArchDef* arch = find_gguf_arch(arch_name);
  if (arch == nullptr) throw ModelError(base_gguf + ": no converter rules for architecture " + arch_name);
  const int64_t n_head = static_cast<int64_t>(md.get_uint(md.arch_key("attention.head_count")));
  const int64_t n_head_kv =
      static_cast<int64_t>(md.opt_uint(md.arch_key("attention.head_count_kv")).value_or(static_cast<uint64_t>(n_head)));

  const SafetensorsFile st = SafetensorsFile::open(st_path);
  struct Half {
    const StTensor* a = nullptr;
    const StTensor* b = nullptr;
    uint32_t flags = 0;
  };
  std::map<std::string, Half> pairs;
  for (const StTensor& t : st.tensors()) {
    const bool is_a = t.name.ends_with(".lora_A.weight"), is_b = t.name.ends_with(".lora_B.weight");
    if (t.name.find("lora_embedding_") != std::string::npos) {
      throw ModelError(st_path + ": " + t.name + ": adapters of the token embeddings are not supported");
    }
    if ((!is_a && !is_b) || t.name.rfind(kPrefix, 0) != 0) {
      throw ModelError(st_path + ": " + t.name + " is not a PEFT LoRA tensor (base_model.model.NAME.lora_A/B.weight)");
    }
    if (!t.is_float() || t.shape.size() != 2) {
      throw ModelError(st_path + ": " + t.name + " must be a float matrix, is " + t.dtype + " " + t.shape_string());
    }
    const std::string hf = t.name.substr(kPrefix.size(), t.name.size() - kPrefix.size() - 14) + ".weight";
    std::string gguf;
    const TensorRule& rule = rule_of(*arch, hf, st_path, gguf);
    Half& h = pairs[gguf];
    (is_a ? h.a : h.b) = &t;
    h.flags = rule.flags;
  }
  if (pairs.empty()) throw ModelError(st_path + ": no lora_A / lora_B tensors");

  LoraFile f;
  f.arch = arch_name;
  f.name = fs::path(dir).filename().string();
  for (auto& [gguf, h] : pairs) {
    if (h.a == nullptr || h.b == nullptr) {
      throw ModelError(st_path + ": " + gguf + " has " + (h.a ? "lora_A" : "lora_B") + " but not " +
                       (h.a ? "lora_B" : "lora_A"));
    }
    const gguf::TensorInfo* bt = base.find_tensor(gguf);
    if (bt == nullptr) throw ModelError(st_path + ": " + gguf + " is not in the base model " + base_gguf);
    LoraPair p;
    p.base = gguf;
    p.rank = h.a->shape[0];
    p.n_in = h.a->shape[1];
    p.n_out = h.b->shape[0];
    if (h.b->shape[1] != p.rank || p.n_in != bt->ne[0] || p.n_out != bt->ne[1] || bt->n_dims != 2) {
      throw ModelError(st_path + ": " + gguf + " " + bt->shape_string() + " has lora_A " + h.a->shape_string() +
                       " and lora_B " + h.b->shape_string() + "; expected [r, " + std::to_string(bt->ne[0]) +
                       "] and [" + std::to_string(bt->ne[1]) + ", r] (an adapter of another base model?)");
    }
    if (cfg.rslora && cfg.r != 0 && p.rank != cfg.r) {
      throw ModelError(st_path + ": " + gguf + " has rank " + std::to_string(p.rank) + ", adapter_config.json r " +
                       std::to_string(cfg.r) + " (use_rslora needs one rank)");
    }
    p.a.resize(static_cast<size_t>(p.rank * p.n_in));
    p.b.resize(static_cast<size_t>(p.n_out * p.rank));
    to_f32(*h.a, p.a.data());
    to_f32(*h.b, p.b.data());
    // B's rows are the base's output rows: the same permutation.
    if (h.flags & kPermuteQ) permute_rows(p.b, p.n_out, p.rank, n_head, gguf);
    if (h.flags & kPermuteK) permute_rows(p.b, p.n_out, p.rank, n_head_kv, gguf);
    f.pairs.push_back(std::move(p));
  }
  const double r = static_cast<double>(f.pairs.front().rank);
  f.alpha = static_cast<float>(cfg.rslora ? cfg.alpha * std::sqrt(r) : cfg.alpha);
  return f;
}

LoraFile convert_peft_lora(const std::string& dir, const std::string& base_gguf, const std::string& out,
                           TensorType type) {
  LoraFile f = read_peft_lora(dir, base_gguf);
  write_lora(f, out, type);
  for (LoraPair& p : f.pairs) {
    p.a.clear();
    p.b.clear();
  }
  return f;
}

}  // namespace ferrite::convert
