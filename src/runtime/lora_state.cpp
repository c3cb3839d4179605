#include "runtime/lora_state.h"

#include <cmath>
#include <string>
#include <utility>

#include "core/error.h"
#include "runtime/kv_cache.h"

namespace ferrite::runtime {

void LoraState::set_adapters(Adapters adapters, std::vector<float> scales) {
  if (!scales.empty() && scales.size() != adapters.size()) {
    throw InvalidArgument(std::to_string(scales.size()) + " LoRA scales for " + std::to_string(adapters.size()) +
                          " adapters");
  }
  adapters_ = std::move(adapters);
  table_ = model::lora_table(adapters_);
  default_ = scales.empty() ? std::vector<float>(adapters_.size(), 1.0f) : std::move(scales);
  own_.assign(static_cast<size_t>(kMaxSequences), {});
}

void LoraState::set_scales(std::span<const float> scales, int seq) {
  if (scales.size() != adapters_.size()) {
    throw InvalidArgument(std::to_string(scales.size()) + " LoRA scales for " + std::to_string(adapters_.size()) +
                          " adapters");
  }
  for (float s : scales) {
    if (!std::isfinite(s)) throw InvalidArgument("a LoRA scale must be a finite number");
  }
  if (seq >= kMaxSequences) throw InvalidArgument("sequence " + std::to_string(seq) + " is out of range");
  std::vector<float>& dst = seq < 0 ? default_ : own_[static_cast<size_t>(seq)];
  dst.assign(scales.begin(), scales.end());
}

void LoraState::reset_scales(int seq) {
  if (seq < 0 || seq >= kMaxSequences) throw InvalidArgument("sequence " + std::to_string(seq) + " is out of range");
  if (!own_.empty()) own_[static_cast<size_t>(seq)].clear();
}

const std::vector<float>& LoraState::scales(int seq) const {
  if (seq < 0 || own_.empty() || seq >= kMaxSequences || own_[static_cast<size_t>(seq)].empty()) return default_;
  return own_[static_cast<size_t>(seq)];
}

const backend::LoraStep* LoraState::step(const int32_t* seq, int64_t n, const int32_t* out_rows, int64_t n_out) {
  const int64_t na = size();
  if (na == 0) return nullptr;
  token_.assign(static_cast<size_t>(na * n), 0.0f);
  out_.assign(static_cast<size_t>(na * n_out), 0.0f);
  active_.assign(static_cast<size_t>(na), 0);
  bool any = false;
  for (int64_t t = 0; t < n; ++t) {
    const std::vector<float>& s = scales(seq != nullptr ? seq[t] : 0);
    for (int64_t i = 0; i < na; ++i) {
      token_[static_cast<size_t>(i * n + t)] = s[static_cast<size_t>(i)];
      if (s[static_cast<size_t>(i)] != 0.0f) active_[static_cast<size_t>(i)] = 1, any = true;
    }
  }
  if (!any) return nullptr;
  for (int64_t i = 0; i < na; ++i) {
    for (int64_t o = 0; o < n_out; ++o) {
      out_[static_cast<size_t>(i * n_out + o)] = token_[static_cast<size_t>(i * n + out_rows[o])];
    }
  }
  step_ = backend::LoraStep{&table_, static_cast<int>(na), token_.data(), out_.data(), active_.data()};
  return &step_;
}

}  // namespace ferrite::runtime
