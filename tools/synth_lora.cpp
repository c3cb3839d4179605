// `ferrite synth-lora BASE.gguf -o OUT.gguf [--rank R] [--alpha A]
// [--stddev S] [--seed N] [--targets LIST] [--outtype f32|f16|q8_0]`: a
// random LoRA adapter in llama.cpp's GGUF format for a model, to compare
// engines on the same adapter file (llama-perplexity --lora against
// ferrite perplexity --lora) and to test.
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "command.h"
#include "convert/lora_writer.h"
#include "core/error.h"
#include "gguf/file.h"

namespace ferrite::tools {
namespace {

struct SynthLoraOptions {
  std::string base, out, targets = "attn_q,attn_k,attn_v,attn_output,ffn_gate,ffn_up,ffn_down", outtype = "f32";
  int64_t rank = 8;
  float alpha = 16.0f, stddev = 0.02f;
  uint32_t seed = 1;
};

int run_synth_lora(const SynthLoraOptions& o) {
  if (o.rank < 1 || o.rank > 4096) throw InvalidArgument("--rank must be in [1, 4096]");
  if (!(o.stddev > 0.0f) || o.stddev > 10.0f) throw InvalidArgument("--stddev must be in (0, 10]");
  std::vector<std::string> targets;
  std::stringstream ss(o.targets);
  for (std::string t; std::getline(ss, t, ',');) {
    if (!t.empty()) targets.push_back(t == "output" ? "output.weight" : t + ".weight");
  }
  TensorType type = TensorType::F32;
  if (o.outtype == "f16") {
    type = TensorType::F16;
  } else if (o.outtype == "q8_0") {
    type = TensorType::Q8_0;
  } else if (o.outtype != "f32") {
    throw InvalidArgument("--outtype " + o.outtype + ": expected f32, f16 or q8_0");
  }
  const gguf::File base = gguf::File::open(o.base);
  const convert::LoraFile f = convert::random_lora(base, targets, o.rank, o.alpha, o.stddev, o.seed);
  convert::write_lora(f, o.out, type);
  std::fprintf(stderr, "%s: %zu random LoRA pairs of rank %lld for %s (alpha %g)\n", o.out.c_str(), f.pairs.size(),
               static_cast<long long>(o.rank), f.arch.c_str(), static_cast<double>(o.alpha));
  return 0;
}

const CommandRegistrar kSynthLora(
    {"synth-lora", "Write a random LoRA adapter (llama.cpp's GGUF format) for a model",
     [](CLI::App& sub) -> std::function<int()> {
       auto opt = std::make_shared<SynthLoraOptions>();
       sub.add_option("base", opt->base, "The model's GGUF")->required();
       sub.add_option("-o,--output", opt->out, "Output GGUF")->required();
       sub.add_option("--rank", opt->rank, "Rank r (default 8)");
       sub.add_option("--alpha", opt->alpha, "adapter.lora.alpha (default 16; 0: none)");
       sub.add_option("--stddev", opt->stddev, "Standard deviation of A's and B's values (default 0.02)");
       sub.add_option("--seed", opt->seed, "Random seed");
       sub.add_option("--targets", opt->targets,
                      "Comma-separated tensor kinds (default attn_q,attn_k,attn_v,attn_output,ffn_gate,ffn_up,"
                      "ffn_down; also output)");
       sub.add_option("--outtype", opt->outtype, "f32 (default), f16 or q8_0");
       return [opt] { return run_synth_lora(*opt); };
     }});

}  // namespace
}  // namespace ferrite::tools
