// `ferrite info MODEL`: architecture, hyperparameters, tokenizer summary and
// every tensor of a GGUF file, and the run-time switches in effect
// (backend/switches.h); `--json` for the same as JSON.
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "backend/switches.h"
#include "command.h"
#include "core/error.h"
#include "gguf/file.h"
#include "gguf/metadata.h"
#include "model/architecture.h"
#include "model_path.h"
#include "runtime/context.h"
#include "runtime/kv_cache.h"

namespace ferrite::tools {
namespace {

struct InfoOptions {
  std::string model;
  bool json = false;
  bool show_metadata = false;
  int64_t n_ctx = 0;      // -c: the KV cache's context (0: the runtime's default)
  int64_t n_batch = 512;  // -b
  int n_parallel = 1;     // -np: sequences the sliding window is sized for
  bool swa_full = false;  // --swa-full
  std::string cache_type_k = "f16", cache_type_v = "f16";
};

// The KV cache a context of these options allocates (kv_cache.h), its CPU
// and GPU layers together: its cells, and with sliding-window (or chunked) layers their window. Empty for a file that
// is not a decoder ferrite runs.
struct CacheFigure {
  bool known = false;
  int64_t n_ctx = 0, window = 0, n_swa_layers = 0, n_layer = 0, bytes = 0, full_bytes = 0;
  bool chunked = false;  // the swa layers attend in chunks (llama4), not through a sliding window
};

CacheFigure cache_figure(const gguf::File& file, const InfoOptions& opt) {
  CacheFigure f;
  const TensorType tk = runtime::cache_type_from_name(opt.cache_type_k, "--cache-type-k");
  const TensorType tv = runtime::cache_type_from_name(opt.cache_type_v, "--cache-type-v");
  try {
    model::HParams hp = model::read_hparams(gguf::Metadata(file));
    const auto arch = model::find_architecture(hp.arch)(file, hp);
    if (arch->is_encoder()) return f;
    f.n_ctx = opt.n_ctx > 0 ? opt.n_ctx
              : hp.n_ctx_train > 0 ? std::min(hp.n_ctx_train, runtime::kDefaultMaxCtx)
                                   : runtime::kDefaultMaxCtx;
    f.n_layer = hp.n_layer;
    f.chunked = hp.n_chunk > 0;
    for (int64_t il = 0; il < hp.n_layer; ++il) f.n_swa_layers += hp.is_swa(il) ? 1 : 0;
    if (!opt.swa_full && f.n_swa_layers > 0) {
      f.window = runtime::KvCache::window_size(hp.reach().span(), opt.n_parallel, opt.n_batch, f.n_ctx);
      if (f.window >= f.n_ctx) f.window = 0;
    }
    f.bytes = runtime::KvCache::planned_bytes(hp, f.n_ctx, tk, tv, f.window);
    f.full_bytes = runtime::KvCache::planned_bytes(hp, f.n_ctx, tk, tv, 0);
    f.known = true;
  } catch (const Error&) {
    // Not a model ferrite runs (a vocabulary file, an unknown architecture): no figure.
  }
  return f;
}

double mib(int64_t b) { return static_cast<double>(b) / (1024.0 * 1024.0); }

template <typename T>
void put(nlohmann::json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}

int run_info(const InfoOptions& opt) {
  // Cache types ferrite does not know: the command line's error before any output.
  runtime::cache_type_from_name(opt.cache_type_k, "--cache-type-k");
  runtime::cache_type_from_name(opt.cache_type_v, "--cache-type-v");
  const std::string path = resolve_model_argument(opt.model);
  const gguf::File file = gguf::File::open(path);
  const gguf::HParamsSummary s = gguf::summarize(file);

  uint64_t n_params = 0;
  uint64_t n_bytes = 0;
  std::map<std::string, uint64_t> count_by_type;
  for (const auto& t : file.tensors()) {
    n_params += t.n_elements;
    n_bytes += t.n_bytes;
    count_by_type[tensor_type_name(t.type)] += 1;
  }
  const double bpw = n_params ? 8.0 * static_cast<double>(n_bytes) / static_cast<double>(n_params) : 0.0;

  if (opt.json) {
    nlohmann::json j;
    j["path"] = path;
    j["gguf_version"] = file.version();
    j["alignment"] = file.alignment();
    j["splits"] = file.n_splits();
    j["architecture"] = s.architecture;
    j["name"] = s.name;
    nlohmann::json hp = nlohmann::json::object();
    put(hp, "context_length", s.context_length);
    put(hp, "embedding_length", s.embedding_length);
    put(hp, "block_count", s.block_count);
    put(hp, "feed_forward_length", s.feed_forward_length);
    put(hp, "head_count", s.head_count);
    put(hp, "head_count_kv", s.head_count_kv);
    put(hp, "rope_dimension_count", s.rope_dimension_count);
    put(hp, "rope_freq_base", s.rope_freq_base);
    put(hp, "norm_epsilon", s.norm_epsilon);
    put(hp, "expert_count", s.expert_count);
    put(hp, "expert_used_count", s.expert_used_count);
    j["hparams"] = hp;
    nlohmann::json tok = nlohmann::json::object();
    put(tok, "model", s.tokenizer_model);
    put(tok, "pre", s.tokenizer_pre);
    tok["n_tokens"] = s.n_tokens;
    put(tok, "bos_token_id", s.bos_token_id);
    put(tok, "eos_token_id", s.eos_token_id);
    tok["chat_template"] = s.has_chat_template;
    j["tokenizer"] = tok;
    nlohmann::json tensors = nlohmann::json::array();
    for (const auto& t : file.tensors()) {
      nlohmann::json jt;
      jt["name"] = t.name;
      jt["type"] = tensor_type_name(t.type);
      jt["ne"] = std::vector<int64_t>(t.ne.begin(), t.ne.begin() + t.n_dims);
      jt["bytes"] = t.n_bytes;
      jt["offset"] = t.offset;
      tensors.push_back(jt);
    }
    j["tensors"] = tensors;
    j["n_params"] = n_params;
    j["n_bytes"] = n_bytes;
    j["bits_per_weight"] = bpw;
    // The run-time switches in effect (backend/switches.h), as read from the environment.
    nlohmann::json sw = nlohmann::json::object();
    for (const auto& [name, value] : backend::describe(backend::env_switches())) sw[name] = value;
    j["switches"] = sw;
    const CacheFigure cf = cache_figure(file, opt);
    if (cf.known) {
      j["kv_cache"] = {{"n_ctx", cf.n_ctx},           {"bytes", cf.bytes},
                       {"whole_cache_bytes", cf.full_bytes}, {"swa_layers", cf.n_swa_layers},
                       {"window_cells", cf.window}};
    }
    if (opt.show_metadata) {
      nlohmann::json md = nlohmann::json::object();
      for (const auto& kv : file.metadata()) md[kv.key] = kv.value.to_string(16);
      j["metadata"] = md;
    }
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }

  std::printf("file:          %s (GGUF v%u, alignment %u, %u file%s)\n", path.c_str(), file.version(),
              file.alignment(), file.n_splits(), file.n_splits() == 1 ? "" : "s");
  std::printf("architecture:  %s\n", s.architecture.empty() ? "(none)" : s.architecture.c_str());
  std::printf("name:          %s\n", s.name.c_str());
  auto row = [](const char* label, const auto& v) {
    if (v) std::printf("%-22s %s\n", label, std::to_string(*v).c_str());
  };
  row("  context_length", s.context_length);
  row("  embedding_length", s.embedding_length);
  row("  block_count", s.block_count);
  row("  feed_forward_length", s.feed_forward_length);
  row("  head_count", s.head_count);
  row("  head_count_kv", s.head_count_kv);
  row("  rope_dimension_count", s.rope_dimension_count);
  row("  rope_freq_base", s.rope_freq_base);
  row("  norm_epsilon", s.norm_epsilon);
  row("  expert_count", s.expert_count);
  row("  expert_used_count", s.expert_used_count);
  std::printf("tokenizer:     %s%s%s, %llu tokens", s.tokenizer_model.value_or("(none)").c_str(),
              s.tokenizer_pre ? " / " : "", s.tokenizer_pre.value_or("").c_str(),
              static_cast<unsigned long long>(s.n_tokens));
  if (s.bos_token_id) std::printf(", bos %lld", static_cast<long long>(*s.bos_token_id));
  if (s.eos_token_id) std::printf(", eos %lld", static_cast<long long>(*s.eos_token_id));
  std::printf("%s\n", s.has_chat_template ? ", chat template" : "");
  if (opt.show_metadata) {
    std::printf("metadata:\n");
    for (const auto& kv : file.metadata()) {
      std::printf("  %-40s %s\n", kv.key.c_str(), kv.value.to_string(8).c_str());
    }
  }
  const CacheFigure cf = cache_figure(file, opt);
  if (cf.known) {
    std::printf("kv cache:      %.2f MiB at context %lld (%s/%s, CPU and GPU layers)", mib(cf.bytes),
                static_cast<long long>(cf.n_ctx),
                opt.cache_type_k.c_str(), opt.cache_type_v.c_str());
    if (cf.window > 0) {
      std::printf(": %lld of %lld layers %s, their window cache holds %lld cells (whole cache %.2f MiB)",
                  static_cast<long long>(cf.n_swa_layers), static_cast<long long>(cf.n_layer),
                  cf.chunked ? "attend in chunks" : "slide",
                  static_cast<long long>(cf.window), mib(cf.full_bytes));
    }
    std::printf("\n");
  }
  std::printf("tensors:       %zu\n", file.tensors().size());
  for (const auto& t : file.tensors()) {
    std::printf("  %-40s %-8s %-24s %12llu bytes\n", t.name.c_str(), tensor_type_name(t.type).c_str(),
                t.shape_string().c_str(), static_cast<unsigned long long>(t.n_bytes));
  }
  std::printf("parameters:    %llu\n", static_cast<unsigned long long>(n_params));
  std::printf("size:          %llu bytes (%.2f MiB), %.4f bits per weight\n", static_cast<unsigned long long>(n_bytes),
              static_cast<double>(n_bytes) / (1024.0 * 1024.0), bpw);
  std::printf("types:        ");
  for (const auto& [name, count] : count_by_type) std::printf(" %s×%llu", name.c_str(), static_cast<unsigned long long>(count));
  std::printf("\nswitches:     ");
  for (const auto& [name, value] : backend::describe(backend::env_switches())) {
    std::printf(" %s=%s", name.c_str(), value.c_str());
  }
  std::printf("\n");
  return 0;
}

const CommandRegistrar kInfo({"info", "Print a GGUF model's architecture, hyperparameters, tokenizer and tensors",
                              [](CLI::App& sub) -> std::function<int()> {
                                auto opt = std::make_shared<InfoOptions>();
                                sub.add_option("-m,--model,model", opt->model, "Model file or name (also as the first argument)")->required();
                                sub.add_flag("--json", opt->json, "Print JSON");
                                sub.add_flag("--metadata", opt->show_metadata, "Also print every metadata key");
                                sub.add_option("-c,--ctx-size", opt->n_ctx,
                                               "Context of the KV cache figure (0: the model's, up to 4096)");
                                sub.add_option("-b,--batch-size", opt->n_batch, "Tokens per pass (sizes the sliding window's cache)");
                                sub.add_option("--parallel", opt->n_parallel,
                                               "Sequences (also -np; sizes the sliding window's cache)");
                                sub.add_flag("--swa-full", opt->swa_full, "The KV cache figure without the sliding window's cache");
                                sub.add_option("--cache-type-k", opt->cache_type_k,
                                               std::string("K cache type of the figure (also -ctk): ") +
                                                   runtime::kCacheTypeNames);
                                sub.add_option("--cache-type-v", opt->cache_type_v,
                                               std::string("V cache type of the figure (also -ctv): ") +
                                                   runtime::kCacheTypeNames);
                                return [opt] { return run_info(*opt); };
                              }});

}  // namespace
}  // namespace ferrite::tools
