// The options of every command that loads a model, with llama.cpp's
// spellings (llama_flags.cpp maps its single-dash ones): the model as the
// first argument or -m, or -hf REPO[:QUANT] (-hff FILE picks a file of the
// repository); -c, -b, -t; -ngl N|all and --fit; -ctk / -ctv; -fa; --mlock;
// --no-mmap; -mg; --lora F, --lora-scaled F S, --lora-init-without-apply.
//
//   ModelOptions mo;
//   add_model_options(sub, mo);
//   ... LoadedModel m = load_model(mo);  runtime::Context ctx(m.model, m.context);
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "model/model.h"
#include "runtime/context.h"

namespace ferrite::tools {

struct ModelOptions {
  std::string model;               // a path or a name (hub/resolve.h)
  std::string hf_repo;             // -hf OWNER/REPO[:QUANT]
  std::string hf_file;             // -hff FILE of that repository
  int64_t n_ctx = 0;               // -c (0: the model's, up to 4096)
  int64_t n_batch = 512;           // -b
  int n_threads = 0;               // -t (0: all CPUs)
  std::string n_gpu_layers = "0";  // -ngl: a number or "all"
  bool fit = false;                // --fit
  int main_gpu = 0;                // -mg (ferrite drives device 0)
  std::string cache_type_k = "f16";
  std::string cache_type_v = "f16";
  bool swa_full = false;           // --swa-full: sliding-window layers keep the whole context
  bool flash_attn = false;         // -fa (accepted: ferrite's attention is always one fused pass)
  bool mlock = false;              // --mlock
  bool no_mmap = false;            // --no-mmap
  std::vector<std::string> lora;   // --lora F (scale 1), repeatable
  std::vector<std::string> lora_scaled;  // --lora-scaled F S, repeatable: F1 S1 F2 S2 ...
  bool lora_init_without_apply = false;  // --lora-init-without-apply: load with scale 0
};

// Which of the options a command declares.
enum ModelOptionSet : unsigned {
  kModelArgument = 1u << 0,  // the model: first argument, -m, -hf, -hff
  kContextOptions = 1u << 1,  // -c, -b, -t
  kGpuOptions = 1u << 2,      // -ngl, --fit, -mg
  kCacheOptions = 1u << 3,    // -ctk, -ctv, -fa
  kMemoryOptions = 1u << 4,   // --mlock, --no-mmap
  kLoraOptions = 1u << 5,     // --lora, --lora-scaled, --lora-init-without-apply
  kAllModelOptions = 0x3f,
};

void add_model_options(CLI::App& sub, ModelOptions& o, unsigned which = kAllModelOptions);

// The model file the options name (-hf, then -m or the first argument),
// resolved and downloaded when needed. Throws InvalidArgument when none is
// named.
std::string model_path(const ModelOptions& o);

struct LoadedModel {
  std::string path;
  std::shared_ptr<const model::Model> model;
  runtime::ContextParams context;  // -c -b -t -ngl -ctk -ctv
};

// Resolves and loads the model (a progress bar on a terminal), applies
// --mlock / --no-mmap, and reads the context options for a context of n_seq
// sequences (the server's slots: --fit counts a sliding window for each).
// -ngl on a build without a GPU backend warns and runs on the CPU.
LoadedModel load_model(const ModelOptions& o, int n_seq = 1);

// The adapters of --lora / --lora-scaled for model m (ids: the --lora files
// in order, then the --lora-scaled ones) into c.lora and their scales into
// c.lora_scales (all 0 with --lora-init-without-apply). Throws the loader's
// errors (model/lora_adapter.h).
void load_lora(const ModelOptions& o, const model::Model& m, runtime::ContextParams& c);

// Loads the model file `path` (a progress bar on a terminal) and applies
// --mlock / --no-mmap: for commands that set up their context themselves.
std::shared_ptr<const model::Model> load_model_file(const ModelOptions& o, const std::string& path);

// The -ngl value as a layer count (runtime::kAllLayers for "all"); with
// --fit, what fits the GPU for a context with parameters c (its cells,
// batch, cache types, sliding windows for c.n_seq_max sequences: the cache
// that context allocates). Throws InvalidArgument for a bad value.
int gpu_layers(const ModelOptions& o, const model::Model& m, const runtime::ContextParams& c);

}  // namespace ferrite::tools
