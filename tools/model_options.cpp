#include "model_options.h"

#include <sys/mman.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>

#include "command.h"
#include "core/error.h"
#include "load_bar.h"
#include "model/lora_adapter.h"
#include "model_path.h"
#include "runtime/kv_cache.h"
#include "runtime/offload.h"

namespace ferrite::tools {
namespace {

constexpr int kMaxAdapters = 64;  // --lora-scaled occurrences

}  // namespace

void add_model_options(CLI::App& sub, ModelOptions& o, unsigned which) {
  if (which & kModelArgument) {
    sub.add_option("-m,--model,model", o.model, "Model file or name (also as the first argument)");
    sub.add_option("--hf-repo", o.hf_repo,
                   "Hugging Face repository OWNER/REPO[:QUANT] (also -hf): the GGUF file of that quant type, "
                   "downloaded into the cache");
    sub.add_option("--hf-file", o.hf_file, "With --hf-repo: this file of the repository (also -hff)");
  }
  if (which & kContextOptions) {
    sub.add_option("-c,--ctx-size", o.n_ctx, "Context size (0: the model's, up to 4096)");
    sub.add_option("-b,--batch-size", o.n_batch, "Tokens per forward pass");
    sub.add_option("-t,--threads", o.n_threads, "Threads (0: all CPUs)");
  }
  if (which & kGpuOptions) {
    sub.add_option("--n-gpu-layers,--gpu-layers", o.n_gpu_layers,
                   "Layers on the GPU: a number or all (also -ngl; a build without a GPU backend warns and runs on "
                   "the CPU)");
    sub.add_flag("--fit", o.fit, "Offload the most layers that fit in the GPU's free memory (prints the numbers)");
    sub.add_option("--main-gpu", o.main_gpu, "GPU device (also -mg; ferrite drives device 0)");
  }
  if (which & kCacheOptions) {
    sub.add_option("--cache-type-k", o.cache_type_k, std::string("K cache type (also -ctk): ") + runtime::kCacheTypeNames);
    sub.add_option("--cache-type-v", o.cache_type_v, std::string("V cache type (also -ctv): ") + runtime::kCacheTypeNames);
    sub.add_flag("--swa-full", o.swa_full,
                 "Sliding-window and chunked layers (gemma2/3, cohere2, gpt-oss, llama4, ...) keep the whole "
                 "context in the KV cache instead of their window or chunk: needed for context shift and for "
                 "re-using a prompt prefix after the window moved (llama.cpp's --swa-full; GPU layers too)");
    sub.add_flag("--flash-attn", o.flash_attn,
                 "Accepted for llama.cpp's -fa: ferrite's attention always runs as one fused pass");
  }
  if (which & kMemoryOptions) {
    sub.add_flag("--mlock", o.mlock, "Keep the model in RAM (no swapping)");
    sub.add_flag("--no-mmap", o.no_mmap,
                 "Accepted for llama.cpp's option; ferrite always maps the file (most weights are repacked into "
                 "its own memory at load)");
  }
  if (which & kLoraOptions) {
    sub.add_option("--lora", o.lora, "LoRA adapter (llama.cpp's GGUF format), scale 1; repeatable");
    sub.add_option("--lora-scaled", o.lora_scaled, "LoRA adapter with a scale: --lora-scaled FILE SCALE; repeatable")
        ->type_size(2)
        ->expected(1, kMaxAdapters);
    sub.add_flag("--lora-init-without-apply", o.lora_init_without_apply,
                 "Load the adapters with scale 0 (the server's POST /lora-adapters sets them)");
  }
}

void load_lora(const ModelOptions& o, const model::Model& m, runtime::ContextParams& c) {
  std::vector<std::pair<std::string, float>> all;
  for (const std::string& f : o.lora) all.emplace_back(f, 1.0f);
  for (size_t i = 0; i + 1 < o.lora_scaled.size(); i += 2) {
    const std::string& v = o.lora_scaled[i + 1];
    size_t used = 0;
    float scale = 0.0f;
    try {
      scale = std::stof(v, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != v.size() || !std::isfinite(scale)) {
      throw InvalidArgument("--lora-scaled " + o.lora_scaled[i] + " " + v + ": the scale must be a number");
    }
    all.emplace_back(o.lora_scaled[i], scale);
  }
  for (const auto& [path, scale] : all) {
    c.lora.push_back(model::LoraAdapter::load(path, m));
    c.lora_scales.push_back(o.lora_init_without_apply ? 0.0f : scale);
    std::fprintf(stderr, "ferrite: LoRA adapter %zu: %s (%zu tensors, scale %g)\n", c.lora.size() - 1,
                 path.c_str(), c.lora.back()->weights().size(), static_cast<double>(c.lora_scales.back()));
  }
}

std::string model_path(const ModelOptions& o) {
  std::string arg = o.model;
  if (!o.hf_repo.empty()) {
    if (!o.model.empty()) throw UsageError("give the model once: a file or name, or --hf-repo");
    arg = o.hf_repo;
    if (!o.hf_file.empty()) {
      const size_t colon = arg.find(':');
      arg = arg.substr(0, colon) + ":" + o.hf_file;
    }
  } else if (!o.hf_file.empty()) {
    throw UsageError("--hf-file needs --hf-repo");
  }
  if (arg.empty()) throw UsageError("no model: give a file or name (first argument or -m), or -hf OWNER/REPO[:QUANT]");
  return resolve_model_argument(arg);
}

int gpu_layers(const ModelOptions& o, const model::Model& m, const runtime::ContextParams& c) {
  int n = 0;
  const std::string& ngl = o.n_gpu_layers;
  if (ngl == "all") {
    n = runtime::kAllLayers;
  } else {
    size_t used = 0;
    try {
      n = std::stoi(ngl, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != ngl.size()) {
      throw InvalidArgument("--n-gpu-layers takes a number of layers or 'all', not '" + ngl + "'");
    }
    if (n < 0) throw InvalidArgument("--n-gpu-layers must not be negative");
  }
  if (o.main_gpu != 0) throw InvalidArgument("--main-gpu " + std::to_string(o.main_gpu) + ": ferrite drives device 0 only");
  if (!runtime::gpu_offload_available()) {
    if (n != 0 || o.fit) {
      std::fprintf(stderr, "ferrite: warning: -ngl/--fit ignored: this build has no GPU backend; running on the CPU\n");
    }
    return 0;
  }
  if (o.fit) {
    const runtime::GpuFit f = runtime::fit_gpu_layers(m, c);
    std::fprintf(stderr, "%s\n", f.report.c_str());
    n = f.n_layers;
  }
  return n;
}

std::shared_ptr<const model::Model> load_model_file(const ModelOptions& o, const std::string& path) {
  if (o.no_mmap) {
    std::fprintf(stderr, "ferrite: note: --no-mmap has no effect: the file is always mapped\n");
  }
  std::shared_ptr<const model::Model> m = load_model_with_bar(path);
  if (o.mlock && ::mlockall(MCL_CURRENT | MCL_FUTURE) != 0) {
    std::fprintf(stderr, "ferrite: warning: --mlock failed (%s); raise the memlock limit (ulimit -l)\n",
                 std::strerror(errno));
  }
  return m;
}

LoadedModel load_model(const ModelOptions& o, int n_seq) {
  LoadedModel out;
  out.path = model_path(o);
  out.model = load_model_file(o, out.path);
  runtime::ContextParams& c = out.context;
  c.n_ctx = o.n_ctx;
  c.n_batch = o.n_batch;
  c.n_threads = o.n_threads;
  c.cache_type = runtime::cache_type_from_name(o.cache_type_k, "--cache-type-k");
  c.cache_type_v = runtime::cache_type_from_name(o.cache_type_v, "--cache-type-v");
  c.swa_full = o.swa_full;
  c.n_seq_max = n_seq;
  c.n_gpu_layers = gpu_layers(o, *out.model, c);
  load_lora(o, *out.model, c);
  return out;
}

}  // namespace ferrite::tools
