// `ferrite convert DIR -o OUT.gguf [--outtype f32|f16|bf16|q8_0]
// [--tokenizer-pre NAME] [--name NAME]`: a Hugging Face checkpoint folder to a
// GGUF file with llama.cpp's tensor names and metadata (src/convert);
// `ferrite convert --lora DIR --base BASE.gguf -o OUT.gguf`: a PEFT LoRA
// adapter folder to llama.cpp's GGUF adapter format (convert/lora_peft.h).
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "command.h"
#include "convert/converter.h"
#include "convert/lora_peft.h"
#include "core/error.h"

namespace ferrite::tools {
namespace {

struct ConvertCliOptions {
  std::string dir, out, outtype = "f16", pre, name, lora, base;
};

TensorType parse_outtype(const std::string& s) {
  if (s == "f32") return TensorType::F32;
  if (s == "f16") return TensorType::F16;
  if (s == "bf16") return TensorType::BF16;
  if (s == "q8_0") return TensorType::Q8_0;
  throw InvalidArgument("--outtype " + s + ": expected f32, f16, bf16 or q8_0");
}

int run_convert_lora(const ConvertCliOptions& o) {
  if (!o.dir.empty()) throw UsageError("give the adapter folder once: --lora DIR (no positional folder)");
  if (o.base.empty()) throw UsageError("--lora needs --base BASE.gguf: the model the adapter is for");
  const convert::LoraFile f = convert::convert_peft_lora(o.lora, o.base, o.out, parse_outtype(o.outtype));
  std::fprintf(stderr, "%s: %zu LoRA pairs of rank %lld for %s, alpha %g\n", o.out.c_str(), f.pairs.size(),
               static_cast<long long>(f.pairs.front().rank), f.arch.c_str(), static_cast<double>(f.alpha));
  return 0;
}

int run_convert(const ConvertCliOptions& o) {
  if (!o.lora.empty()) return run_convert_lora(o);
  if (o.dir.empty()) throw UsageError("no checkpoint folder: give DIR (or --lora DIR --base BASE.gguf)");
  convert::ConvertOptions opt;
  opt.outtype = parse_outtype(o.outtype);
  opt.vocab.pre_override = o.pre;
  opt.name = o.name;
  const auto start = std::chrono::steady_clock::now();
  uint64_t bytes = 0;
  const convert::ConvertPlan plan =
      convert::convert_checkpoint(o.dir, o.out, opt, [&](size_t i, size_t n, const convert::PlannedTensor& t) {
        uint64_t count = 1;
        for (int64_t d : t.shape) count *= static_cast<uint64_t>(d);
        bytes += tensor_row_bytes(t.type, static_cast<uint64_t>(t.shape.back())) * (count / t.shape.back());
        std::fprintf(stderr, "\r[%zu/%zu] %-40s %-6s", i + 1, n, t.name.c_str(), tensor_type_name(t.type).c_str());
      });
  std::fprintf(stderr, "\n");
  for (const std::string& note : plan.notes) std::fprintf(stderr, "note: %s\n", note.c_str());
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr, "%s: %s -> %s, %zu tensors, %.1f MiB of tensor data, tokenizer %s, in %.1f s\n",
               o.out.c_str(), plan.hf_class.c_str(), plan.arch->gguf_arch, plan.tensors.size(),
               static_cast<double>(bytes) / (1 << 20), plan.vocab_summary.c_str(), secs);
  return 0;
}

const CommandRegistrar kConvert(
    {"convert", "Convert a Hugging Face checkpoint folder (safetensors) to GGUF",
     [](CLI::App& sub) -> std::function<int()> {
       auto opt = std::make_shared<ConvertCliOptions>();
       sub.add_option("dir", opt->dir, "Folder with config.json, model*.safetensors and the tokenizer files");
       sub.add_option("-o,--outfile", opt->out, "Output GGUF file")->required();
       sub.add_option("--outtype", opt->outtype,
                      "f32, f16 (default), bf16 or q8_0; norms, biases and other 1-D tensors stay f32");
       sub.add_option("--tokenizer-pre", opt->pre,
                      "tokenizer.ggml.pre to write when the BPE pre-tokenizer's hash is not in llama.cpp's table "
                      "(a tokenizer trained by you); a recognised hash wins");
       sub.add_option("--name", opt->name, "general.name (default: the folder's name)");
       sub.add_option("--lora", opt->lora,
                      "A PEFT LoRA adapter folder (adapter_config.json, adapter_model.safetensors) to convert to "
                      "llama.cpp's GGUF adapter format instead of a model (needs --base)");
       sub.add_option("--base", opt->base, "With --lora: the base model's GGUF (architecture, names, shapes)");
       return [opt] { return run_convert(*opt); };
     }});

}  // namespace
}  // namespace ferrite::tools
