// How one Hugging Face architecture becomes a GGUF model: the llama.cpp
// architecture name, the config.json keys it writes (params), the tokenizer
// it reads, and a table of tensor rules (HF name pattern -> GGUF name,
// expected shape, transform). Each family of architectures lives in one
// arch_<family>.cpp (as src/model does); registry.cpp maps the class names
// of config.json's "architectures" to them.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "convert/hf_files.h"
#include "convert/vocab.h"
#include "gguf/value.h"

namespace ferrite::convert {

// A dimension a tensor's shape is checked against, resolved from config.json.
enum class Dim : uint8_t {
  None,      // end of a shape
  Any,       // not checked
  One,       // 1
  Vocab,     // vocab_size
  Embd,      // hidden_size
  Q,         // n_head * head_dim
  KV,        // n_head_kv * head_dim
  HeadDim,   // head_dim
  QKV,       // Q + 2 KV
  FF,        // intermediate_size
  FF2,       // 2 * intermediate_size (fused gate/up)
  Experts,   // number of experts
  FFExp,     // an expert's intermediate size
  FFShexp,   // the shared expert's intermediate size
  Pos,       // learned positions
  Types,     // token types (BERT)
};

struct Dims {
  int64_t vocab = 0, embd = 0, n_head = 0, n_head_kv = 0, head_dim = 0, ff = 0, experts = 0, ff_exp = 0,
          ff_shexp = 0, pos = 0, types = 0, n_layer = 0;
  int64_t ssm_groups = 0;  // mamba2's n_groups (kGroupRows)
  // 0 when unknown (then not checked).
  int64_t get(Dim d) const;
  // "num_key_value_heads x head_dim = 256"
  std::string describe(Dim d) const;
};

// Transforms of a tensor's data on the way, as llama.cpp's converter applies them.
enum TensorFlags : uint32_t {
  kPermuteQ = 1u << 0,    // llama: Q rows reordered for adjacent-pair RoPE (heads = n_head)
  kPermuteK = 1u << 1,    // the same for K (heads = n_head_kv)
  kAddOne = 1u << 2,      // gemma: RMSNorm weights stored as 1 + w
  kTranspose = 1u << 3,   // gpt2: Conv1D weights [in, out] -> [out, in] (3-D: each matrix, llama4's experts)
  kNeoxQkv = 1u << 4,     // gptneox: per-head interleaved q|k|v -> q, k, v blocks
  kFalconQkv = 1u << 5,   // falcon: per-KV-group q...q k v -> q, k, v blocks
  kAlsoOutput = 1u << 6,  // gpt2: also written as output.weight (tied head)
  kNegExp = 1u << 7,      // mamba2: A_log -> A = -exp(A_log)
  kSqueeze = 1u << 8,     // mamba2: dimensions of 1 dropped (conv1d [ch, 1, k] -> [ch, k])
  kUnsqueeze = 1u << 9,   // mamba2: a trailing dimension of 1 added (A, D [n_head] -> [n_head, 1])
  kGroupRows = 1u << 10,  // mamba2: [n] -> [ssm_groups, n / ssm_groups] (the gated norm's weight)
  // granitemoehybrid: rows [.., 2 ff, n] hold gate then up: the rule's name
  // (an "ffn_gate" one) gets the first half, its "ffn_up" twin the second.
  kSplitGateUp = 1u << 11,
  kFirstHalf = 1u << 12,   // (set by the planner) the first half of the rows of each outer block
  kSecondHalf = 1u << 13,  // the second half
  // gpt-oss, with kSplitGateUp: gate and up alternate (gate rows 0, 2, 4, ...;
  // up rows 1, 3, 5, ...) instead of following one another.
  kInterleaved = 1u << 14,
  // With kSplitGateUp: the split is of the last dimension (gpt-oss's stacked
  // biases [E, 2 ff]) instead of the rows.
  kSplitLastDim = 1u << 15,
};

struct TensorRule {
  const char* hf;                 // "model.layers.{bid}.self_attn.q_proj.weight"; {xid}: an expert's index
  const char* gguf;               // "blk.{bid}.attn_q.weight"; "" drops the tensor
  std::array<Dim, 3> shape;       // as stored in the checkpoint, outermost first (Dim::None ends it)
  uint32_t flags = 0;
};

// Writes "<arch>.<suffix>" keys from config.json and resolves the dims.
class Params {
 public:
  Params(const HfFiles& f, std::string arch) : f_(f), arch_(std::move(arch)) {}

  const HfFiles& files() const { return f_; }
  const std::string& arch() const { return arch_; }
  const std::string& config_path() const { return config_path_; }

  // The first of `keys` present in config.json (integers must be >= 0).
  std::optional<int64_t> opt_int(std::initializer_list<const char*> keys) const;
  int64_t req_int(std::initializer_list<const char*> keys) const;  // ModelError naming the keys when absent
  std::optional<double> opt_float(std::initializer_list<const char*> keys) const;
  double req_float(std::initializer_list<const char*> keys) const;
  std::optional<bool> opt_bool(std::initializer_list<const char*> keys) const;
  // rope_theta, or (transformers 5) rope_parameters.rope_theta.
  std::optional<double> rope_theta() const;
  // rope_scaling, or rope_parameters when it names a scaling other than
  // "default"; nullptr when there is none.
  const Json* rope_scaling() const;

  void u32(const std::string& suffix, int64_t v);
  void f32(const std::string& suffix, double v);
  void boolean(const std::string& suffix, bool v);
  void str(const std::string& suffix, const std::string& v);
  void set_key(const std::string& key, gguf::Value v);  // an un-prefixed key

  Dims dims;
  std::vector<gguf::KeyValue> kvs;
  std::vector<std::string> notes;

 private:
  const HfFiles& f_;
  std::string arch_;
  std::string config_path_ = "config.json";
};

// A tensor produced by the converter itself (rope factors).
struct ExtraTensor {
  std::string name;
  std::vector<float> data;
  std::vector<int64_t> shape;  // outermost first
};

struct PlannedTensor;  // tensor_plan.h

struct ArchDef {
  const char* gguf_arch;
  std::vector<const char*> hf_classes;
  std::function<void(Params&)> params;
  // The tokenizer keys (vocab_size: config.json's, or -1).
  std::function<VocabKeys(const HfFiles&, int64_t vocab_size, const VocabOptions&)> vocab;
  std::vector<TensorRule> rules;
  // Per layer, groups of GGUF names of which at least one must be present.
  std::vector<std::vector<const char*>> layer_requires;
  // Whole-model names that must be present.
  std::vector<const char*> requires_;
  // Checkpoint names ending (or starting) so are dropped without a rule.
  std::vector<const char*> drop_suffixes;
  std::vector<const char*> drop_prefixes;
  // Drops a checkpoint tensor by its name and config.json (the multi-token-
  // prediction layers beyond num_hidden_layers of GLM-4.5 and DeepSeek-V3,
  // which ferrite does not run); may be null.
  std::function<bool(const std::string&, const Params&)> drop;
  // Renames a checkpoint name before matching (bert: "bert." prefix, gamma/beta); may be null.
  std::function<std::string(const std::string&)> rename;
  // Tensors computed from config.json (may be null).
  std::function<std::vector<ExtraTensor>(Params&)> extra;
  // Renames a GGUF name by config.json (granitemoehybrid: the shared MLP is
  // the dense FFN without experts); may be null.
  std::function<std::string(const std::string& gguf, const Params&)> gguf_rename;
  // Changes the planned tensors by config.json once every tensor is planned
  // (t5: the output head scaled by hidden_size^-0.5); may be null.
  std::function<void(std::vector<PlannedTensor>&, const Params&)> finish;
};

// Looks up config.json's "architectures" class. nullptr when unsupported.
const ArchDef* find_arch(const std::string& hf_class);
// The first definition writing general.architecture `gguf_arch` (its
// tensor rules name a PEFT adapter's tensors, lora_peft.h); nullptr when none.
const ArchDef* find_gguf_arch(const std::string& gguf_arch);
// Every supported class name, sorted.
std::vector<std::string> supported_classes();

// The parameters every decoder shares (llama.cpp's base set_gguf_parameters):
// block_count, context_length, embedding_length, feed_forward_length,
// head counts, rope freq base, norm epsilons, experts, head_dim.
void base_params(Params& p);
// The dims of a Llama-style decoder from config.json.
void decoder_dims(Params& p);

// The families (arch_<family>.cpp).
std::vector<ArchDef> llama_archs();
std::vector<ArchDef> qwen_archs();
std::vector<ArchDef> gemma_archs();
std::vector<ArchDef> phi3_archs();
std::vector<ArchDef> gpt2_archs();
std::vector<ArchDef> gptneox_archs();
std::vector<ArchDef> starcoder2_archs();
std::vector<ArchDef> falcon_archs();
std::vector<ArchDef> bert_archs();
std::vector<ArchDef> mamba2_archs();
std::vector<ArchDef> granite_hybrid_archs();
std::vector<ArchDef> granite_archs();
std::vector<ArchDef> olmo_archs();
std::vector<ArchDef> cohere_archs();
std::vector<ArchDef> glm4_archs();
std::vector<ArchDef> ernie_archs();
std::vector<ArchDef> hunyuan_archs();
std::vector<ArchDef> layer_norm_decoder_archs();
std::vector<ArchDef> gpt_line_archs();
std::vector<ArchDef> deepseek2_archs();
std::vector<ArchDef> smollm3_archs();
std::vector<ArchDef> llama4_archs();
std::vector<ArchDef> gpt_oss_archs();
std::vector<ArchDef> t5_archs();
// Llama 3.1's rope_freqs from rope_scaling "llama3" (none otherwise).
std::vector<ExtraTensor> llama3_rope_freqs(Params& p);

// Whether a "model.layers.N." name is of a layer at or past config.json's
// num_hidden_layers (the multi-token-prediction layers): ArchDef::drop.
bool drop_mtp_layers(const std::string& name, const Params& p);
// Refuses a config whose no_rope_layers (1: RoPE, 0: none) or
// no_rope_layer_interval is not "every step-th layer without RoPE" (the
// pattern smollm3 and llama4 run).
void require_no_rope_every(const Params& p, int64_t step);

}  // namespace ferrite::convert
