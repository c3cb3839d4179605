// `ferrite synth --preset NAME --type TYPE --vocab VOCAB.gguf -o FILE`:
// writes a random-weight model of a real shape for benchmarks. Weights are
// N(0, 0.02) values quantized once into a pool of blocks per type; tensors
// are filled by drawing pool blocks at random (many threads), so a 7B file
// costs about what writing it costs.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "command.h"
#include "core/error.h"
#include "gguf/file.h"
#include "gguf/writer.h"
#include "quant/dequantize.h"
#include "quant/mix.h"
#include "quant/type_traits.h"
#include "quant_progress.h"
#include "synth_rwkv.h"

namespace ferrite::tools {
namespace {

struct Shape {
  const char* name;
  const char* arch;
  int64_t n_embd, n_layer, n_ff, n_head, n_head_kv;
  int64_t n_expert, n_expert_used;
  float rope_base, norm_eps;
  bool qkv_bias;
};

// clang-format off
constexpr Shape kShapes[] = {
    {"llama-1b",   "llama", 2048, 22,  5632, 32,  4, 0, 0,    10000.0f, 1e-5f, false},
    {"llama-7b",   "llama", 4096, 32, 11008, 32, 32, 0, 0,    10000.0f, 1e-5f, false},
    {"llama3-8b",  "llama", 4096, 32, 14336, 32,  8, 0, 0,   500000.0f, 1e-5f, false},
    {"mixtral-8x1b", "llama", 2048, 16, 5632, 32, 8, 8, 2, 1000000.0f, 1e-5f, false},
    {"qwen2-7b",   "qwen2", 3584, 28, 18944, 28,  4, 0, 0, 1000000.0f, 1e-6f, true},
};
// clang-format on

constexpr int64_t kContextLength = 4096;
constexpr float kWeightStd = 0.02f;
constexpr int64_t kPoolBlocks = 4096;
constexpr uint64_t kChunkBytes = 64ull << 20;

struct SynthOptions {
  std::string preset, type, vocab, output;
  int threads = 0;
  uint64_t seed = 42;
};

gguf::TensorInfo make_tensor(std::string name, std::vector<int64_t> ne) {
  gguf::TensorInfo t;
  t.name = std::move(name);
  t.n_dims = static_cast<uint32_t>(ne.size());
  t.n_elements = 1;
  for (size_t i = 0; i < ne.size(); ++i) {
    t.ne[i] = ne[i];
    t.n_elements *= static_cast<uint64_t>(ne[i]);
  }
  return t;
}

std::vector<gguf::TensorInfo> model_tensors(const Shape& s, int64_t n_vocab) {
  const int64_t head_dim = s.n_embd / s.n_head, n_kv = head_dim * s.n_head_kv;
  std::vector<gguf::TensorInfo> v;
  v.push_back(make_tensor("token_embd.weight", {s.n_embd, n_vocab}));
  for (int64_t l = 0; l < s.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    v.push_back(make_tensor(p + "attn_norm.weight", {s.n_embd}));
    v.push_back(make_tensor(p + "attn_q.weight", {s.n_embd, s.n_embd}));
    v.push_back(make_tensor(p + "attn_k.weight", {s.n_embd, n_kv}));
    v.push_back(make_tensor(p + "attn_v.weight", {s.n_embd, n_kv}));
    if (s.qkv_bias) {
      v.push_back(make_tensor(p + "attn_q.bias", {s.n_embd}));
      v.push_back(make_tensor(p + "attn_k.bias", {n_kv}));
      v.push_back(make_tensor(p + "attn_v.bias", {n_kv}));
    }
    v.push_back(make_tensor(p + "attn_output.weight", {s.n_embd, s.n_embd}));
    v.push_back(make_tensor(p + "ffn_norm.weight", {s.n_embd}));
    if (s.n_expert > 0) {
      v.push_back(make_tensor(p + "ffn_gate_inp.weight", {s.n_embd, s.n_expert}));
      v.push_back(make_tensor(p + "ffn_gate_exps.weight", {s.n_embd, s.n_ff, s.n_expert}));
      v.push_back(make_tensor(p + "ffn_down_exps.weight", {s.n_ff, s.n_embd, s.n_expert}));
      v.push_back(make_tensor(p + "ffn_up_exps.weight", {s.n_embd, s.n_ff, s.n_expert}));
    } else {
      v.push_back(make_tensor(p + "ffn_gate.weight", {s.n_embd, s.n_ff}));
      v.push_back(make_tensor(p + "ffn_down.weight", {s.n_ff, s.n_embd}));
      v.push_back(make_tensor(p + "ffn_up.weight", {s.n_embd, s.n_ff}));
    }
  }
  v.push_back(make_tensor("output_norm.weight", {s.n_embd}));
  v.push_back(make_tensor("output.weight", {s.n_embd, n_vocab}));
  return v;
}

// kPoolBlocks blocks of `type` quantized from N(0, std) values.
std::vector<uint8_t> make_pool(TensorType type, float stddev, uint64_t seed) {
  const quant::TypeTraits& tt = quant::type_traits(type);
  if (tt.from_float == nullptr) throw InvalidArgument(std::string("synth cannot write ") + tt.name + " yet");
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, stddev);
  std::vector<float> x(static_cast<size_t>(kPoolBlocks * tt.block_size));
  for (float& v : x) v = normal(rng);
  std::vector<uint8_t> pool(static_cast<size_t>(kPoolBlocks) * tt.block_bytes);
  // The values are i.i.d., so every column matters alike: a uniform
  // importance is the true one (and lets the IQ1/IQ2 types, which refuse to
  // run without an importance matrix, be written).
  const std::vector<float> uniform(static_cast<size_t>(tt.block_size), 1.0f);
  quant::quantize_rows(type, x.data(), pool.data(), kPoolBlocks, tt.block_size,
                       tt.needs_imatrix ? uniform.data() : nullptr);
  return pool;
}

inline uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Fills `n_blocks` blocks at dst with random pool blocks, on `threads` threads.
void fill_from_pool(const std::vector<uint8_t>& pool, size_t block_bytes, uint8_t* dst, uint64_t n_blocks,
                    int threads, uint64_t seed) {
  auto work = [&](uint64_t begin, uint64_t end) {
    uint64_t s = seed ^ (begin * 0x2545F4914F6CDD1Dull);
    for (uint64_t i = begin; i < end; ++i) {
      const uint64_t k = splitmix(s) % static_cast<uint64_t>(kPoolBlocks);
      std::memcpy(dst + i * block_bytes, pool.data() + k * block_bytes, block_bytes);
    }
  };
  std::vector<std::thread> pool_threads;
  const uint64_t per = (n_blocks + static_cast<uint64_t>(threads) - 1) / static_cast<uint64_t>(threads);
  for (int t = 1; t < threads; ++t) {
    const uint64_t b = std::min(n_blocks, per * static_cast<uint64_t>(t)), e = std::min(n_blocks, b + per);
    if (b < e) pool_threads.emplace_back(work, b, e);
  }
  work(0, std::min(n_blocks, per));
  for (auto& th : pool_threads) th.join();
}

// The attention shapes' keys.
void set_model_metadata(gguf::Writer& w, const Shape& s) {
  const std::string a = s.arch;
  w.set(a + ".context_length", gguf::Value::u32(kContextLength));
  w.set(a + ".embedding_length", gguf::Value::u32(static_cast<uint32_t>(s.n_embd)));
  w.set(a + ".block_count", gguf::Value::u32(static_cast<uint32_t>(s.n_layer)));
  w.set(a + ".feed_forward_length", gguf::Value::u32(static_cast<uint32_t>(s.n_ff)));
  w.set(a + ".attention.head_count", gguf::Value::u32(static_cast<uint32_t>(s.n_head)));
  w.set(a + ".attention.head_count_kv", gguf::Value::u32(static_cast<uint32_t>(s.n_head_kv)));
  w.set(a + ".rope.dimension_count", gguf::Value::u32(static_cast<uint32_t>(s.n_embd / s.n_head)));
  w.set(a + ".rope.freq_base", gguf::Value::f32(s.rope_base));
  w.set(a + ".attention.layer_norm_rms_epsilon", gguf::Value::f32(s.norm_eps));
  if (s.n_expert > 0) {
    w.set(a + ".expert_count", gguf::Value::u32(static_cast<uint32_t>(s.n_expert)));
    w.set(a + ".expert_used_count", gguf::Value::u32(static_cast<uint32_t>(s.n_expert_used)));
  }
}

int run_synth(const SynthOptions& opt) {
  const Shape* shape = nullptr;
  std::string names;
  for (const Shape& s : kShapes) {
    names += std::string(" ") + s.name;
    if (opt.preset == s.name) shape = &s;
  }
  const RwkvShape* rwkv = find_rwkv_shape(opt.preset, names);
  if (shape == nullptr && rwkv == nullptr) {
    throw InvalidArgument("unknown --preset '" + opt.preset + "'; known:" + names);
  }
  const quant::Preset* preset = quant::find_preset(opt.type);
  if (preset == nullptr) throw InvalidArgument("unknown --type '" + opt.type + "'");
  const gguf::File vocab = gguf::File::open(opt.vocab);
  const gguf::Value* tokens = vocab.find("tokenizer.ggml.tokens");
  if (tokens == nullptr || tokens->size() == 0) throw ModelError(opt.vocab + ": no tokenizer.ggml.tokens");
  const auto n_vocab = static_cast<int64_t>(tokens->size());

  std::vector<gguf::TensorInfo> tensors = rwkv ? rwkv_tensors(*rwkv, n_vocab) : model_tensors(*shape, n_vocab);
  for (auto& t : tensors) t.type = TensorType::F32;
  const quant::MixModel model =
      rwkv ? quant::MixModel{rwkv->version == 7 ? "rwkv7" : "rwkv6", 1, 1, 0, rwkv->n_layer}
           : quant::MixModel{shape->arch, shape->n_head, shape->n_head_kv, shape->n_expert, shape->n_layer};
  const std::vector<TensorType> types = quant::plan_mix(tensors, model, *preset, {});
  const char* preset_name = rwkv ? rwkv->name : shape->name;

  gguf::Writer w;
  w.set("general.architecture", gguf::Value::string(model.arch));
  w.set("general.name", gguf::Value::string(std::string("ferrite synth ") + preset_name));
  w.set("general.file_type", gguf::Value::u32(preset->file_type));
  w.set("general.quantization_version", gguf::Value::u32(2));
  if (rwkv) {
    set_rwkv_metadata(w, *rwkv);
  } else {
    set_model_metadata(w, *shape);
  }
  for (const auto& kv : vocab.metadata()) {
    if (kv.key.rfind("tokenizer.", 0) == 0) w.set(kv.key, kv.value);
  }
  uint64_t total = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    std::vector<int64_t> ne(tensors[i].ne.begin(), tensors[i].ne.begin() + tensors[i].n_dims);
    w.add_tensor(tensors[i].name, types[i], ne);
    total += tensor_row_bytes(types[i], static_cast<uint64_t>(ne[0])) * (tensors[i].n_elements / static_cast<uint64_t>(ne[0]));
  }
  w.open(opt.output);

  const int threads = opt.threads > 0 ? opt.threads : std::max(1u, std::thread::hardware_concurrency());
  const auto start = std::chrono::steady_clock::now();
  std::map<TensorType, std::vector<uint8_t>> pools;
  Progress progress(total);
  uint64_t done = 0;
  std::vector<uint8_t> chunk;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& t = tensors[i];
    const quant::TypeTraits& tt = quant::type_traits(types[i]);
    const uint64_t n_blocks = t.n_elements / static_cast<uint64_t>(tt.block_size);
    progress.update(done, t.name, tt.name);
    if (t.n_dims == 1) {  // norms: ones; biases: small values
      // (RWKV's group-norm weights are time_mix_ln.weight.)
      const bool ones = t.name.find("norm") != std::string::npos || t.name.find("_ln.weight") != std::string::npos;
      std::vector<float> v(t.n_elements, ones ? 1.0f : 0.0f);
      if (t.name.find("bias") != std::string::npos) {
        std::mt19937 rng(static_cast<uint32_t>(opt.seed + i));
        std::normal_distribution<float> normal(0.0f, kWeightStd);
        for (float& x : v) x = normal(rng);
      }
      w.write_tensor_data(v.data(), v.size() * sizeof(float));
      done += v.size() * sizeof(float);
      continue;
    }
    auto it = pools.find(types[i]);
    if (it == pools.end()) it = pools.emplace(types[i], make_pool(types[i], kWeightStd, opt.seed)).first;
    const uint64_t blocks_per_chunk = std::max<uint64_t>(1, kChunkBytes / tt.block_bytes);
    for (uint64_t b = 0; b < n_blocks; b += blocks_per_chunk) {
      const uint64_t n = std::min(blocks_per_chunk, n_blocks - b);
      chunk.resize(n * tt.block_bytes);
      fill_from_pool(it->second, tt.block_bytes, chunk.data(), n, threads, opt.seed * 1315423911ull + i * 7919ull + b);
      w.write_tensor_data(chunk.data(), chunk.size());
      done += chunk.size();
      progress.update(done, t.name, tt.name);
    }
  }
  w.close();
  progress.finish();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr, "%s: %s %s, %.2f GiB in %.1f s (%.2f GiB/s)\n", opt.output.c_str(), preset_name, preset->name,
               static_cast<double>(total) / (1 << 30), secs, static_cast<double>(total) / (1 << 30) / secs);
  return 0;
}

const CommandRegistrar kSynth({"synth", "Write a random-weight model of a real shape (for benchmarks)",
                               [](CLI::App& sub) -> std::function<int()> {
                                 auto opt = std::make_shared<SynthOptions>();
                                 sub.add_option("--preset", opt->preset,
                                                "Shape: llama-1b llama-7b llama3-8b mixtral-8x1b qwen2-7b rwkv6-1b6 rwkv7-1b5")
                                     ->required();
                                 sub.add_option("--type", opt->type, "Quantization preset (Q4_K_M, Q8_0, F16, ...)")
                                     ->required();
                                 sub.add_option("--vocab", opt->vocab, "Vocabulary GGUF (tokenizer.* keys are copied)")
                                     ->required();
                                 sub.add_option("-o,--output", opt->output, "Output GGUF")->required();
                                 sub.add_option("--threads,-t", opt->threads, "Worker threads (default: all cores)");
                                 sub.add_option("--seed", opt->seed, "Random seed");
                                 return [opt] { return run_synth(*opt); };
                               }});

}  // namespace
}  // namespace ferrite::tools
