#include "convert/lora_writer.h"

#include <algorithm>
#include <random>

#include "core/error.h"
#include "gguf/metadata.h"
#include "gguf/writer.h"
#include "quant/type_traits.h"

namespace ferrite::convert {
namespace {

TensorType type_for(TensorType want, int64_t row) {
  if (want == TensorType::Q8_0 && row % 32 != 0) return TensorType::F16;
  return want;
}

std::vector<uint8_t> encode(const std::vector<float>& v, int64_t row, TensorType t) {
  const uint64_t rows = v.size() / static_cast<uint64_t>(row);
  std::vector<uint8_t> out(rows * tensor_row_bytes(t, static_cast<uint64_t>(row)));
  if (t == TensorType::F32) {
    std::copy_n(reinterpret_cast<const uint8_t*>(v.data()), out.size(), out.data());
  } else {
    const quant::TypeTraits& tr = quant::type_traits(t);
    if (tr.from_float == nullptr) throw InvalidArgument(std::string("cannot write adapter tensors as ") + tensor_type_name(t));
    tr.from_float(v.data(), out.data(), static_cast<int64_t>(v.size()), nullptr);
  }
  return out;
}

}  // namespace

void write_lora(const LoraFile& f, const std::string& path, TensorType type) {
  if (type != TensorType::F32 && type != TensorType::F16 && type != TensorType::BF16 && type != TensorType::Q8_0) {
    throw InvalidArgument(std::string("adapter tensors are written as f32, f16, bf16 or q8_0, not ") +
                          tensor_type_name(type));
  }
  if (f.pairs.empty()) throw InvalidArgument("an adapter needs at least one lora_a / lora_b pair");
  gguf::Writer w;
  w.set("general.architecture", gguf::Value::string(f.arch));
  w.set("general.type", gguf::Value::string("adapter"));
  if (!f.name.empty()) w.set("general.name", gguf::Value::string(f.name));
  w.set("adapter.type", gguf::Value::string("lora"));
  w.set("adapter.lora.alpha", gguf::Value::f32(f.alpha));
  std::vector<std::vector<uint8_t>> data;
  for (const LoraPair& p : f.pairs) {
    if (p.rank < 1 || p.n_in < 1 || p.n_out < 1 || p.a.size() != static_cast<size_t>(p.rank * p.n_in) ||
        p.b.size() != static_cast<size_t>(p.n_out * p.rank)) {
      throw InvalidArgument("adapter pair " + p.base + ": A or B has the wrong number of values");
    }
    const TensorType ta = type_for(type, p.n_in), tb = type_for(type, p.rank);
    w.add_tensor(p.base + ".lora_a", ta, {p.n_in, p.rank});
    w.add_tensor(p.base + ".lora_b", tb, {p.rank, p.n_out});
    data.push_back(encode(p.a, p.n_in, ta));
    data.push_back(encode(p.b, p.rank, tb));
  }
  w.open(path);
  for (const auto& d : data) w.write_tensor_data(d.data(), d.size());
  w.close();
}

LoraFile random_lora(const gguf::File& model, const std::vector<std::string>& targets, int64_t rank, float alpha,
                     float stddev, uint32_t seed) {
  LoraFile f;
  f.arch = gguf::Metadata(model).architecture();
  f.alpha = alpha;
  f.name = "random LoRA (rank " + std::to_string(rank) + ", seed " + std::to_string(seed) + ")";
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, stddev);
  for (const gguf::TensorInfo& t : model.tensors()) {
    bool wanted = false;
    for (const std::string& s : targets) wanted = wanted || t.name == s || t.name.ends_with("." + s);
    if (!wanted || t.n_dims != 2) continue;
    LoraPair p;
    p.base = t.name;
    p.n_in = t.ne[0];
    p.n_out = t.ne[1];
    p.rank = rank;
    p.a.resize(static_cast<size_t>(rank * p.n_in));
    p.b.resize(static_cast<size_t>(p.n_out * rank));
    for (float& v : p.a) v = normal(rng);
    for (float& v : p.b) v = normal(rng);
    f.pairs.push_back(std::move(p));
  }
  if (f.pairs.empty()) throw InvalidArgument("no tensor of the model matches the adapter's targets");
  return f;
}

}  // namespace ferrite::convert
