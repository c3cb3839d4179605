#include "llama_flags.h"

#include <algorithm>
#include <string_view>

namespace ferrite::tools {
namespace {

// clang-format off
constexpr LlamaSpelling kShort[] = {
    {"-Cb", "--cpu-mask-batch"}, {"-Cbd", "--cpu-mask-batch-draft"}, {"-Cd", "--cpu-mask-draft"},
    {"-Cr", "--cpu-range"}, {"-Crb", "--cpu-range-batch"}, {"-Crbd", "--cpu-range-batch-draft"},
    {"-Crd", "--cpu-range-draft"}, {"-bf", "--binary-file"}, {"-cb", "--cont-batching"},
    {"-cd", "--ctx-size-draft"}, {"-cnv", "--conversation"}, {"-co", "--color"}, {"-ctk", "--cache-type-k"},
    {"-ctv", "--cache-type-v"}, {"-dev", "--device"}, {"-devd", "--device-draft"}, {"-dkvc", "--dump-kv-cache"},
    {"-dt", "--defrag-thold"}, {"-embd", "--embeddings"}, {"-fa", "--flash-attn"}, {"-gan", "--grp-attn-n"},
    {"-gaw", "--grp-attn-w"}, {"-hf", "--hf-repo"}, {"-hfd", "--hf-repo-draft"}, {"-hff", "--hf-file"},
    {"-hffv", "--hf-file-v"}, {"-hfr", "--hf-repo"}, {"-hfrd", "--hf-repo-draft"}, {"-hfrv", "--hf-repo-v"},
    {"-hft", "--hf-token"}, {"-hfv", "--hf-repo-v"}, {"-if", "--interactive-first"},
    {"-lcd", "--lookup-cache-dynamic"}, {"-lcs", "--lookup-cache-static"}, {"-lv", "--log-verbosity"},
    {"-md", "--model-draft"}, {"-mg", "--main-gpu"}, {"-mli", "--multiline-input"}, {"-mmp", "--mmap"},
    {"-mu", "--model-url"}, {"-mv", "--model-vocoder"}, {"-ngl", "--n-gpu-layers"},
    {"-ngld", "--n-gpu-layers-draft"}, {"-nkvo", "--no-kv-offload"}, {"-no-cnv", "--no-conversation"},
    {"-nocb", "--no-cont-batching"}, {"-np", "--parallel"}, {"-npl", "--npl"}, {"-npp", "--npp"},
    {"-ns", "--sequences"}, {"-ntg", "--ntg"}, {"-oe", "--output-err"}, {"-ofreq", "--output-frequency"},
    {"-pg", "--pg"}, {"-pps", "--pps"}, {"-ptc", "--print-token-count"}, {"-rpc", "--rpc"},
    {"-sm", "--split-mode"}, {"-sp", "--special"}, {"-sps", "--slot-prompt-similarity"},
    {"-sys", "--system-prompt"}, {"-tb", "--threads-batch"}, {"-tbd", "--threads-batch-draft"},
    {"-td", "--threads-draft"}, {"-to", "--timeout"}, {"-ts", "--tensor-split"}, {"-ub", "--ubatch-size"},
};

// Single letters and long names of llama.cpp's options.
constexpr const char* kOther[] = {
    "-C", "-a", "-b", "-c", "-e", "-f", "-h", "-i", "-j", "-l", "-m", "-n", "-o", "-p", "-r", "-s", "-t", "-v",
    "--alias", "--all-logits", "--api-key", "--api-key-file", "--attention", "--batch-size", "--binary-file",
    "--cache-reuse", "--cache-type-k", "--cache-type-v", "--chat-template", "--chat-template-file",
    "--check-tensors", "--chunk", "--chunk-separator", "--chunk-size", "--chunks", "--color", "--completion-bash",
    "--cont-batching", "--context-file", "--control-vector", "--control-vector-layer-range",
    "--control-vector-scaled", "--conversation", "--cpu-mask", "--cpu-mask-batch", "--cpu-mask-batch-draft",
    "--cpu-mask-draft", "--cpu-range", "--cpu-range-batch", "--cpu-range-batch-draft", "--cpu-range-draft",
    "--cpu-strict", "--cpu-strict-batch", "--cpu-strict-batch-draft", "--cpu-strict-draft", "--ctx-size",
    "--ctx-size-draft", "--defrag-thold", "--delay", "--device", "--device-draft", "--draft", "--draft-max",
    "--draft-min", "--draft-n", "--draft-n-min", "--draft-p-min", "--draft-p-split", "--dry-allowed-length",
    "--dry-base", "--dry-multiplier", "--dry-penalty-last-n", "--dry-sequence-breaker", "--dump-kv-cache",
    "--dynatemp-exp", "--dynatemp-range", "--embd-bge-small-en-default", "--embd-e5-small-en-default",
    "--embd-gte-small-default", "--embd-normalize", "--embd-output-format", "--embd-separator", "--embedding",
    "--embeddings", "--escape", "--file", "--fim-qwen-1.5b-default", "--fim-qwen-3b-default",
    "--fim-qwen-7b-default", "--flash-attn", "--frequency-penalty", "--from-chunk", "--gpu-layers",
    "--gpu-layers-draft", "--grammar", "--grammar-file", "--grp-attn-n", "--grp-attn-w", "--hellaswag",
    "--hellaswag-tasks", "--help", "--hf-file", "--hf-file-v", "--hf-repo", "--hf-repo-draft", "--hf-repo-v",
    "--hf-token", "--host", "--ignore-eos", "--image", "--in-file", "--in-prefix", "--in-prefix-bos", "--in-suffix",
    "--interactive", "--interactive-first", "--jinja", "--json-schema", "--junk", "--keep", "--kl-divergence",
    "--kl-divergence-base", "--list-devices", "--log-colors", "--log-disable", "--log-file", "--log-prefix",
    "--log-timestamps", "--log-verbose", "--log-verbosity", "--logit-bias", "--lookup-cache-dynamic",
    "--lookup-cache-static", "--lora", "--lora-init-without-apply", "--lora-scaled", "--main-gpu", "--method",
    "--metrics", "--min-p", "--mirostat", "--mirostat-ent", "--mirostat-lr", "--mlock", "--mmap", "--mmproj",
    "--model", "--model-draft", "--model-url", "--model-vocoder", "--multiline-input", "--multiple-choice",
    "--multiple-choice-tasks", "--n-gen", "--n-gpu-layers", "--n-gpu-layers-draft", "--n-predict", "--n-prompt",
    "--negative-file", "--no-cont-batching", "--no-context-shift", "--no-conversation", "--no-display-prompt",
    "--no-escape", "--no-kv-offload", "--no-mmap", "--no-perf", "--no-ppl", "--no-slots", "--no-warmup",
    "--no-webui", "--numa", "--output", "--output-err", "--output-file", "--output-format", "--output-frequency",
    "--override-kv", "--parallel", "--path", "--pca-batch", "--pca-iter", "--perplexity", "--poll", "--poll-batch",
    "--poll-batch-draft", "--poll-draft", "--pooling", "--port", "--pos", "--positive-file", "--ppl-output-type",
    "--ppl-stride", "--predict", "--presence-penalty", "--print-token-count", "--prio", "--prio-batch",
    "--prio-batch-draft", "--prio-draft", "--process-output", "--progress", "--prompt", "--prompt-cache",
    "--prompt-cache-all", "--prompt-cache-ro", "--props", "--reasoning-format", "--repeat-last-n",
    "--repeat-penalty", "--repetitions", "--rerank", "--reranking", "--reverse-prompt", "--rope-freq-base",
    "--rope-freq-scale", "--rope-scale", "--rope-scaling", "--rpc", "--sampler-seq", "--samplers", "--sampling-seq",
    "--save-all-logits", "--save-frequency", "--seed", "--sequences", "--simple-io", "--slot-prompt-similarity",
    "--slot-save-path", "--slots", "--special", "--split-mode", "--spm-infill", "--ssl-cert-file", "--ssl-key-file",
    "--swa-full", "--system-prompt", "--temp", "--tensor-split", "--threads", "--threads-batch", "--threads-batch-draft",
    "--threads-draft", "--threads-http", "--timeout", "--top-k", "--top-nsigma", "--top-p", "--tts-oute-default",
    "--tts-use-guide-tokens", "--typical", "--ubatch-size", "--usage", "--verbose", "--verbose-prompt",
    "--verbosity", "--version", "--winogrande", "--winogrande-tasks", "--xtc-probability", "--xtc-threshold",
    "--yarn-attn-factor", "--yarn-beta-fast", "--yarn-beta-slow", "--yarn-ext-factor", "--yarn-orig-ctx",
};
// clang-format on

const LlamaSpelling* find_short(std::string_view flag) {
  for (const LlamaSpelling& s : kShort) {
    if (flag == s.llama) return &s;
  }
  return nullptr;
}

}  // namespace

std::span<const LlamaSpelling> llama_short_spellings() { return kShort; }

bool is_llama_flag(const std::string& flag) {
  if (find_short(flag) != nullptr) return true;
  return std::any_of(std::begin(kOther), std::end(kOther), [&](const char* f) { return flag == f; });
}

std::optional<std::string> rewrite_llama_flags(const CLI::App& sub, std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    std::string& arg = args[i];
    if (arg == "--") break;  // the rest are values
    if (arg.size() < 2 || arg[0] != '-' || (arg[1] >= '0' && arg[1] <= '9') || arg[1] == '.') continue;
    // --name=value: the name decides.
    const size_t eq = arg.rfind("--", 0) == 0 ? arg.find('=') : std::string::npos;
    const std::string given = arg.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : arg.substr(eq);
    const LlamaSpelling* s = find_short(given);
    const std::string name = s != nullptr ? s->ferrite : given;
    // Short options that carry their value ("-c512") are left to CLI11.
    const bool single = name.rfind("--", 0) != 0;
    const CLI::Option* opt = sub.get_option_no_throw(single && name.size() > 2 ? name.substr(0, 2) : name);
    if (opt == nullptr || (single && name.size() > 2)) {
      if (opt == nullptr && is_llama_flag(given)) {
        return "not supported: " + given + " (a llama.cpp option that `" + sub.get_name() +
               "` does not implement; --help lists its options)";
      }
      continue;
    }
    arg = name + value;
    // The option's value follows: never a flag to rewrite.
    if (value.empty() && opt->get_items_expected_min() > 0) ++i;
  }
  return std::nullopt;
}

}  // namespace ferrite::tools
