#include "model/lora_adapter.h"

#include <map>
#include <utility>

#include "core/error.h"
#include "gguf/metadata.h"
#include "model/model.h"

namespace ferrite::model {
namespace {

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool adapter_type_ok(TensorType t) {
  return t == TensorType::F32 || t == TensorType::F16 || t == TensorType::BF16 || t == TensorType::Q8_0;
}

void check_metadata(const gguf::File& f, const Model& model) {
  const gguf::Metadata md(f);
  const std::string& p = f.path();
  const std::optional<std::string> type = md.opt_string("general.type");
  if (type != "adapter") {
    throw ModelError(p + ": general.type is " + (type ? "'" + *type + "'" : std::string("absent")) +
                     ", not 'adapter': not a LoRA adapter file");
  }
  const std::optional<std::string> kind = md.opt_string("adapter.type");
  if (kind != "lora") {
    throw ModelError(p + ": adapter.type is " + (kind ? "'" + *kind + "'" : std::string("absent")) +
                     ", ferrite applies only 'lora' adapters");
  }
  const std::string arch = md.architecture();
  const std::string want = gguf::Metadata(model.file()).architecture();
  if (arch != want) {
    throw ModelError(p + ": the adapter is for architecture '" + arch + "', the model is '" + want + "'");
  }
}

// The pairs by base tensor name, from the adapter's tensor names.
std::map<std::string, std::pair<const gguf::TensorInfo*, const gguf::TensorInfo*>> pair_up(const gguf::File& f) {
  std::map<std::string, std::pair<const gguf::TensorInfo*, const gguf::TensorInfo*>> pairs;
  for (const gguf::TensorInfo& t : f.tensors()) {
    const bool is_a = ends_with(t.name, ".lora_a"), is_b = ends_with(t.name, ".lora_b");
    if (!is_a && !is_b) {
      if (ends_with(t.name, "_norm.weight")) continue;  // llama.cpp skips norm deltas too
      throw ModelError(f.path() + ": tensor '" + t.name + "' is neither NAME.lora_a nor NAME.lora_b");
    }
    auto& pr = pairs[t.name.substr(0, t.name.size() - 7)];
    (is_a ? pr.first : pr.second) = &t;
  }
  return pairs;
}

}  // namespace

bool lora_adaptable(const std::string& name) {
  if (name == "output.weight") return true;
  if (name.rfind("blk.", 0) != 0) return false;
  size_t i = 4;
  while (i < name.size() && name[i] >= '0' && name[i] <= '9') ++i;
  if (i == 4 || i >= name.size() || name[i] != '.') return false;
  const std::string rest = name.substr(i + 1);
  for (const char* s : {"attn_q.weight", "attn_k.weight", "attn_v.weight", "attn_qkv.weight", "attn_output.weight",
                        "ffn_gate.weight", "ffn_up.weight", "ffn_down.weight"}) {
    if (rest == s) return true;
  }
  return false;
}

std::shared_ptr<const LoraAdapter> LoraAdapter::load(const std::string& path, const Model& model) {
  return from_file(gguf::File::open(path), model);
}

std::shared_ptr<const LoraAdapter> LoraAdapter::from_file(gguf::File file, const Model& model) {
  std::shared_ptr<LoraAdapter> ad(new LoraAdapter());
  ad->file_ = std::make_unique<gguf::File>(std::move(file));
  ad->model_ = &model;
  const gguf::File& f = *ad->file_;
  const std::string& p = f.path();
  check_metadata(f, model);
  ad->alpha_ = gguf::Metadata(f).opt_float("adapter.lora.alpha").value_or(0.0f);
  for (const auto& [name, pr] : pair_up(f)) {
    const auto [a, b] = pr;
    if (a == nullptr || b == nullptr) {
      throw ModelError(p + ": tensor '" + name + "' has " + (a ? "lora_a" : "lora_b") + " but not " +
                       (a ? "lora_b" : "lora_a"));
    }
    const gguf::TensorInfo* base = model.file().find_tensor(name);
    if (base == nullptr) {
      throw ModelError(p + ": tensor '" + name + "' is not in the model " + model.file().path() +
                       " (an adapter for another model?)");
    }
    if (!lora_adaptable(name)) {
      throw ModelError(p + ": tensor '" + name + "': ferrite applies adapters to the attention and feed-forward "
                       "projections (blk.N.attn_q/k/v/qkv/output, ffn_gate/up/down) and output.weight only");
    }
    for (const gguf::TensorInfo* t : {a, b}) {
      if (!adapter_type_ok(t->type)) {
        throw ModelError(p + ": tensor '" + t->name + "' has type " + tensor_type_name(t->type) +
                         "; adapters take f32, f16, bf16 or q8_0");
      }
      if (t->n_dims != 2) throw ModelError(p + ": tensor '" + t->name + "' is not a matrix: " + t->shape_string());
    }
    const int64_t r = a->ne[1];
    if (a->ne[0] != base->ne[0] || b->ne[1] != base->ne[1] || b->ne[0] != r || base->ne[2] != 1 || r < 1) {
      throw ModelError(p + ": tensor '" + name + "' " + base->shape_string() + " has lora_a " + a->shape_string() +
                       " and lora_b " + b->shape_string() + "; expected lora_a [" + std::to_string(base->ne[0]) +
                       ", r] and lora_b [r, " + std::to_string(base->ne[1]) + "] (an adapter for another model?)");
    }
    backend::LoraWeight w;
    w.base = base;
    w.a = backend::Weight{a, nullptr};
    w.b = backend::Weight{b, nullptr};
    w.alpha = ad->alpha_;
    ad->weights_.push_back(w);
  }
  if (ad->weights_.empty()) throw ModelError(p + ": the adapter has no lora_a / lora_b tensors");
  return ad;
}

backend::LoraTable lora_table(const std::vector<std::shared_ptr<const LoraAdapter>>& adapters) {
  backend::LoraTable table;
  for (size_t i = 0; i < adapters.size(); ++i) {
    for (const backend::LoraWeight& w : adapters[i]->weights()) {
      table[w.base].push_back({static_cast<int>(i), &w});
    }
  }
  return table;
}

}  // namespace ferrite::model
