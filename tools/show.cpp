// `ferrite show NAME [--template] [--json]`: what a model is, in a few lines
// (as `ollama show`): path, architecture, parameters, quantization, context
// and embedding lengths, tokenizer, chat template. `ferrite info` lists
// every hyperparameter and tensor.
#include <cstdio>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "command.h"
#include "gguf/file.h"
#include "gguf/metadata.h"
#include "model_path.h"
#include "model_store.h"

namespace ferrite::tools {
namespace {

struct ShowOptions {
  std::string model;
  bool json = false;
  bool template_only = false;
};

std::string count_text(uint64_t n) {
  char buf[32];
  if (n >= 1000000000ull) {
    std::snprintf(buf, sizeof buf, "%.2fB", static_cast<double>(n) / 1e9);
  } else if (n >= 1000000ull) {
    std::snprintf(buf, sizeof buf, "%.2fM", static_cast<double>(n) / 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%.2fK", static_cast<double>(n) / 1e3);
  }
  return buf;
}

int run_show(const ShowOptions& opt) {
  const std::string path = resolve_model_argument(opt.model);
  const gguf::File file = gguf::File::open(path);
  const gguf::HParamsSummary s = gguf::summarize(file);
  const gguf::Value* tmpl = file.find("tokenizer.chat_template");
  const std::string chat_template = tmpl != nullptr && tmpl->is_string() ? tmpl->as_string() : "";
  if (opt.template_only) {
    if (chat_template.empty()) {
      std::fprintf(stderr, "%s has no chat template\n", path.c_str());
      return 1;
    }
    std::printf("%s\n", chat_template.c_str());
    return 0;
  }
  uint64_t n_params = 0, n_bytes = 0;
  for (const gguf::TensorInfo& t : file.tensors()) {
    n_params += t.n_elements;
    n_bytes += t.n_bytes;
  }
  const std::string type = model_type_name(path);
  if (opt.json) {
    nlohmann::json j = {{"path", path},           {"architecture", s.architecture}, {"name", s.name},
                        {"parameters", n_params}, {"quantization", type},            {"tensor_bytes", n_bytes},
                        {"tokenizer", s.tokenizer_model.value_or("")}, {"vocab_size", s.n_tokens},
                        {"chat_template", chat_template.empty() ? nlohmann::json(nullptr) : nlohmann::json(chat_template)}};
    if (s.context_length) j["context_length"] = *s.context_length;
    if (s.embedding_length) j["embedding_length"] = *s.embedding_length;
    if (s.block_count) j["block_count"] = *s.block_count;
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("  %-18s %s\n", "path", path.c_str());
  if (!s.name.empty()) std::printf("  %-18s %s\n", "name", s.name.c_str());
  std::printf("  %-18s %s\n", "architecture", s.architecture.c_str());
  std::printf("  %-18s %s\n", "parameters", count_text(n_params).c_str());
  std::printf("  %-18s %s\n", "quantization", type.c_str());
  std::printf("  %-18s %s\n", "size", human_size(n_bytes).c_str());
  if (s.context_length) std::printf("  %-18s %llu\n", "context length", static_cast<unsigned long long>(*s.context_length));
  if (s.embedding_length) {
    std::printf("  %-18s %llu\n", "embedding length", static_cast<unsigned long long>(*s.embedding_length));
  }
  if (s.block_count) std::printf("  %-18s %llu\n", "layers", static_cast<unsigned long long>(*s.block_count));
  std::printf("  %-18s %s, %llu tokens\n", "tokenizer", s.tokenizer_model.value_or("?").c_str(),
              static_cast<unsigned long long>(s.n_tokens));
  std::printf("  %-18s %s\n", "chat template", chat_template.empty() ? "none" : "yes (show --template prints it)");
  return 0;
}

const CommandRegistrar kShow({"show", "Show what a model is (architecture, size, quantization, template)",
                              [](CLI::App& sub) -> std::function<int()> {
                                auto opt = std::make_shared<ShowOptions>();
                                sub.add_option("-m,--model,model", opt->model, "Model file or name")->required();
                                sub.add_flag("--json", opt->json, "Print JSON");
                                sub.add_flag("--template", opt->template_only, "Print the chat template");
                                return [opt] { return run_show(*opt); };
                              }});

}  // namespace
}  // namespace ferrite::tools
