// libFuzzer target for the model loader: a pulled GGUF is untrusted input,
// past its parser too. Each input is a recipe applied to one of the shared
// synth models (every architecture ferrite loads; FERRITE_SHARED or
// ../shared): its widths shrunk by a factor the input picks (so a model is a
// few hundred KiB), then hyper-parameters changed or removed, tensors
// dropped, reshaped or given another type. The GGUF is written to memory,
// parsed, bound (Model::from_file) and, when that succeeds, a context
// evaluates two tokens. Everything must either work or raise a
// ferrite::Error: never crash, hang or allocate without bound.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/file.h"
#include "gguf/tensor_type.h"
#include "gguf/writer.h"
#include "model/model.h"
#include "runtime/context.h"

namespace {

using namespace ferrite;

constexpr size_t kMaxInput = 4096;
// Widths (metadata and tensor dimensions) are divided by one of these.
constexpr int64_t kScales[] = {8, 16, 32, 64};
// Metadata keys that are widths, scaled with the tensors.
const char* const kWidthKeys[] = {"embedding_length",  "feed_forward_length", "rope.dimension_count",
                                  "attention.key_length", "attention.value_length",
                                  "expert_feed_forward_length", "expert_shared_feed_forward_length"};
constexpr TensorType kTypes[] = {TensorType::F32, TensorType::F16, TensorType::BF16, TensorType::Q8_0,
                                 TensorType::Q4_0, TensorType::Q4_K, TensorType::Q6_K, TensorType::IQ4_NL};
constexpr size_t kMaxTensorBytes = 4u << 20;

struct Template {
  std::string name;
  std::vector<gguf::KeyValue> metadata;
  std::vector<gguf::TensorInfo> tensors;
};

std::vector<Template>& templates() {
  static std::vector<Template> t = [] {
    std::vector<Template> out;
    const char* env = std::getenv("FERRITE_SHARED");
    const std::filesystem::path synth = std::filesystem::path(env ? env : "../shared") / "models" / "synth";
    for (const char* arch : {"llama", "llama-moe", "qwen2", "qwen2moe", "gemma2", "phi3", "gpt2", "gptneox",
                             "starcoder2", "falcon"}) {
      const std::filesystem::path p = synth / ("synth-" + std::string(arch) + "-f32.gguf");
      try {
        gguf::File f = gguf::File::open(p.string());
        out.push_back({arch, f.metadata(), f.tensors()});
      } catch (const Error& e) {
        std::fprintf(stderr, "model_fuzz: cannot read %s: %s\n", p.c_str(), e.what());
      }
    }
    if (out.empty()) {
      std::fprintf(stderr, "model_fuzz: no synth models (set FERRITE_SHARED)\n");
      std::abort();
    }
    return out;
  }();
  return t;
}

// Reads the recipe: small integers from the input, 0 when it runs out.
class Recipe {
 public:
  Recipe(const uint8_t* d, size_t n) : d_(d), n_(n) {}
  bool more() const { return at_ < n_; }
  uint32_t byte() { return at_ < n_ ? d_[at_++] : 0; }
  uint32_t u16() { return byte() | (byte() << 8); }
  uint32_t u32() { return u16() | (u16() << 16); }

 private:
  const uint8_t* d_;
  size_t n_;
  size_t at_ = 0;
};

bool ends_with(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

bool is_width_key(const std::string& key) {
  for (const char* k : kWidthKeys) {
    if (ends_with(key, (std::string(".") + k).c_str())) return true;
  }
  return false;
}

gguf::Value fuzz_value(const gguf::Value& old, Recipe& r) {
  switch (r.byte() % 6) {
    case 0: return gguf::Value::u32(0);
    case 1: return gguf::Value::u32(r.byte());
    case 2: return gguf::Value::u32(r.u32());
    case 3: return gguf::Value::i32(-static_cast<int32_t>(r.byte()) - 1);
    case 4: {
      const float specials[] = {0.0f, -1.0f, 1e30f, __builtin_nanf(""), __builtin_inff(), 1e-30f};
      return gguf::Value::f32(specials[r.byte() % 6]);
    }
    default: return old.is_integer() ? gguf::Value::u32(static_cast<uint32_t>(old.as_int()) + 1) : gguf::Value::string("x");
  }
}

// Deterministic bytes for a tensor: small floats for float types, varied
// bytes for quantized ones.
std::vector<uint8_t> tensor_bytes(TensorType type, uint64_t n_bytes, uint32_t seed) {
  std::vector<uint8_t> out(n_bytes);
  uint32_t x = seed * 2654435761u + 1;
  if (type == TensorType::F32) {
    for (size_t i = 0; i + 4 <= out.size(); i += 4) {
      x = x * 1664525u + 1013904223u;
      const float v = static_cast<float>(static_cast<int32_t>(x >> 8) % 2000) / 10000.0f;
      std::memcpy(&out[i], &v, 4);
    }
    return out;
  }
  for (auto& b : out) {
    x = x * 1664525u + 1013904223u;
    b = static_cast<uint8_t>(x >> 24);
  }
  if (type == TensorType::F16 || type == TensorType::BF16) {
    for (size_t i = 1; i < out.size(); i += 2) out[i] &= 0x3b;  // finite, small
  }
  return out;
}

void run(const uint8_t* data, size_t size) {
  Recipe r(data, size);
  const Template& t = templates()[r.byte() % templates().size()];
  const int64_t scale = kScales[r.byte() % 4];
  const auto shrink = [scale](int64_t v) { return v >= scale && v % scale == 0 && v != 4096 ? v / scale : v; };

  // The template, shrunk.
  std::vector<gguf::KeyValue> kvs = t.metadata;
  for (gguf::KeyValue& kv : kvs) {
    if (is_width_key(kv.key) && kv.value.is_integer()) kv.value = gguf::Value::u32(static_cast<uint32_t>(shrink(kv.value.as_int())));
  }
  struct T {
    std::string name;
    TensorType type;
    std::vector<int64_t> ne;
    bool keep = true;
  };
  std::vector<T> ts;
  for (const gguf::TensorInfo& ti : t.tensors) {
    T x{ti.name, ti.type, {}};
    for (uint32_t d = 0; d < ti.n_dims; ++d) x.ne.push_back(shrink(ti.ne[d]));
    ts.push_back(std::move(x));
  }

  // The recipe's changes.
  while (r.more()) {
    const uint32_t op = r.byte() % 6;
    if (op == 0 && !kvs.empty()) {
      gguf::KeyValue& kv = kvs[r.u16() % kvs.size()];
      if (kv.key == "general.alignment" || kv.value.is_array()) continue;
      kv.value = fuzz_value(kv.value, r);
    } else if (op == 1 && !kvs.empty()) {
      const size_t i = r.u16() % kvs.size();
      if (kvs[i].key != "general.alignment") kvs.erase(kvs.begin() + static_cast<long>(i));
    } else if (op == 2 && !ts.empty()) {
      ts[r.u16() % ts.size()].keep = false;
    } else if (op == 3 && !ts.empty()) {
      T& x = ts[r.u16() % ts.size()];
      const size_t d = r.byte() % (x.ne.size() + 1);
      const uint32_t how = r.byte() % 5;
      if (d == x.ne.size()) {
        if (x.ne.size() < 4) x.ne.push_back(1 + (how % 3));
      } else if (how == 0) {
        x.ne[d] += 1;
      } else if (how == 1) {
        x.ne[d] = std::max<int64_t>(1, x.ne[d] - 1);
      } else if (how == 2) {
        x.ne[d] = std::min<int64_t>(x.ne[d] * 2, 1 << 20);
      } else if (how == 3) {
        x.ne[d] = 1;
      } else if (x.ne.size() > 1) {
        std::swap(x.ne[0], x.ne[1]);
      }
    } else if (op == 4 && !ts.empty()) {
      ts[r.u16() % ts.size()].type = kTypes[r.byte() % (sizeof kTypes / sizeof kTypes[0])];
    } else if (op == 5 && !ts.empty()) {
      // A tensor of another name: a duplicate of one or an unknown one.
      T x = ts[r.u16() % ts.size()];
      x.name += r.byte() % 2 ? ".extra" : "";
      ts.push_back(std::move(x));
    }
  }

  gguf::Writer w;
  std::set<std::string> names;
  for (const gguf::KeyValue& kv : kvs) w.set(kv.key, kv.value);
  std::vector<std::vector<uint8_t>> bytes;
  uint64_t total = 0;
  for (size_t i = 0; i < ts.size(); ++i) {
    const T& x = ts[i];
    const TensorTypeInfo* info = tensor_type_info(x.type);
    if (!x.keep || !info || x.ne.empty() || x.ne[0] % info->block_size != 0 || !names.insert(x.name).second) continue;
    uint64_t n = 1;
    for (int64_t d : x.ne) n *= static_cast<uint64_t>(d);
    const uint64_t n_bytes = n / info->block_size * info->block_bytes;
    if (n_bytes > kMaxTensorBytes || total + n_bytes > 4 * kMaxTensorBytes) continue;
    total += n_bytes;
    w.add_tensor(x.name, x.type, x.ne);
    bytes.push_back(tensor_bytes(x.type, n_bytes, static_cast<uint32_t>(i)));
  }
  const std::vector<uint8_t> image = w.to_bytes(bytes);
  std::shared_ptr<const model::Model> m =
      model::Model::from_file(gguf::File::parse(image.data(), image.size(), "fuzz-" + t.name + ".gguf"));
  runtime::ContextParams cp;
  cp.n_ctx = 8;
  cp.n_batch = 4;
  cp.n_threads = 1;
  runtime::Context ctx(m, cp);
  const int32_t tokens[2] = {1, static_cast<int32_t>(std::min<int64_t>(5, m->hparams().n_vocab - 1))};
  (void)ctx.eval(std::span<const int32_t>(tokens, 2));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > kMaxInput) return 0;
  try {
    run(data, size);
  } catch (const ferrite::Error&) {
  }
  return 0;
}
