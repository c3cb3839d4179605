// `ferrite embed -m MODEL -p TEXT`: embeddings of prompts, as llama.cpp's
// llama-embedding computes them. Prompts come from -p (repeatable) or -f,
// each split at --embd-separator (default a newline; -p text takes \n
// escapes as llama.cpp's does); each is tokenized
// with the model's special tokens (bert: [CLS] ... [SEP]) and evaluated
// alone. The pooled embedding of every prompt (pooling from the model, or
// --pooling), or with pooling none the hidden state of every token, is
// normalized (--embd-normalize) and printed (--embd-output-format).
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "command.h"
#include "core/error.h"
#include "embed_output.h"
#include "model/model.h"
#include "model/pooling.h"
#include "model_options.h"
#include "runtime/batch.h"
#include "runtime/context.h"
#include "tokenizer/tokenizer.h"

namespace ferrite::tools {
namespace {

struct EmbedOptions {
  ModelOptions model;
  std::vector<std::string> prompts;
  std::string file;
  std::string separator = "\n";
  std::string pooling;  // empty: the model's
  int normalize = kNormEuclidean;
  std::string format = "text";
};

std::vector<std::string> split(const std::string& s, const std::string& sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t end; (end = s.find(sep, start)) != std::string::npos; start = end + sep.size()) {
    out.push_back(s.substr(start, end - start));
  }
  out.push_back(s.substr(start));
  return out;
}

// -p text with llama.cpp's escapes: \n \r \t \\ \' \" (others kept as written).
std::string process_escapes(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    switch (s[++i]) {
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case '\\': out += '\\'; break;
      case '\'': out += '\''; break;
      case '"': out += '"'; break;
      default: out += '\\'; out += s[i]; break;
    }
  }
  return out;
}

model::Pooling parse_pooling(const std::string& name, model::Pooling model_default) {
  if (name.empty()) return model_default;
  if (name == "none") return model::Pooling::None;
  if (name == "mean") return model::Pooling::Mean;
  if (name == "cls") return model::Pooling::Cls;
  if (name == "last") return model::Pooling::Last;
  if (name == "rank") return model::Pooling::Rank;  // a reranker's score (the context refuses other models)
  throw InvalidArgument("unknown pooling '" + name + "' (none, mean, cls, last or rank)");
}

std::vector<std::string> gather_prompts(const EmbedOptions& opt) {
  if (opt.separator.empty()) throw InvalidArgument("--embd-separator must not be empty");
  std::vector<std::string> texts;
  for (const std::string& p : opt.prompts) texts.push_back(process_escapes(p));
  if (!opt.file.empty()) {
    std::ifstream in(opt.file, std::ios::binary);
    if (!in) throw IoError(opt.file, "cannot open");
    std::ostringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    if (!text.empty() && text.back() == '\n') text.pop_back();  // as llama.cpp's -f
    texts.push_back(std::move(text));
  }
  if (texts.empty()) throw InvalidArgument("no input: give -p TEXT or -f FILE");
  std::vector<std::string> prompts;
  for (const std::string& t : texts) {
    for (std::string& p : split(t, opt.separator)) prompts.push_back(std::move(p));
  }
  return prompts;
}

int run_embed(const EmbedOptions& opt) {
  if (opt.normalize < kNormNone) {
    throw InvalidArgument("--embd-normalize must be -1 (none), 0 (max-abs int16), 1 (taxicab), 2 (euclidean) "
                          "or a p-norm above 2");
  }
  if (opt.format != "text" && opt.format != "json" && opt.format != "array") {
    throw InvalidArgument("unknown --embd-output-format '" + opt.format + "' (text, json or array)");
  }
  if (opt.model.n_ctx < 0) throw InvalidArgument("-c must not be negative");
  const std::vector<std::string> prompts = gather_prompts(opt);

  const LoadedModel lm = load_model(opt.model);
  const std::shared_ptr<const model::Model>& model = lm.model;
  const model::HParams& hp = model->hparams();
  const model::Pooling pooling = parse_pooling(opt.pooling, hp.pooling);
  const tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_gguf(model->file());
  const bool encoder = model->arch().is_encoder();

  std::vector<std::vector<int32_t>> inputs;
  int64_t longest = 0;
  for (const std::string& p : prompts) {
    inputs.push_back(tok.encode(p, /*add_special=*/true, /*parse_special=*/true));
    if (inputs.back().empty()) throw InvalidArgument("a prompt gives no tokens (an empty line?)");
    longest = std::max(longest, static_cast<int64_t>(inputs.back().size()));
  }
  if (encoder && hp.n_ctx_train > 0 && longest > hp.n_ctx_train) {
    throw InvalidArgument("a prompt has " + std::to_string(longest) + " tokens, more than the model's context of " +
                          std::to_string(hp.n_ctx_train));
  }
  if (longest > opt.model.n_batch) {
    throw InvalidArgument("a prompt has " + std::to_string(longest) + " tokens, more than the batch size " +
                          std::to_string(opt.model.n_batch) + " (-b)");
  }
  runtime::ContextParams cp = lm.context;
  // A reranker pooled otherwise than by its head: its token states are needed.
  if (hp.pooling == model::Pooling::Rank && pooling != model::Pooling::Rank) cp.pooling_type = 0;
  runtime::Context ctx(model, cp);
  if (!encoder) ctx.set_embeddings(true);  // decoders: hidden states (InvalidArgument where the arch has none)
  if (!encoder && longest > ctx.n_ctx()) {
    throw InvalidArgument("a prompt has " + std::to_string(longest) + " tokens, more than the context size " +
                          std::to_string(ctx.n_ctx()) + " (-c)");
  }

  EmbeddingReport report;
  report.prompts = prompts;
  report.per_token = pooling == model::Pooling::None;
  report.normalize = opt.normalize;
  const int64_t n_embd = hp.n_embd;
  for (const std::vector<int32_t>& in : inputs) {
    runtime::Batch batch;
    for (size_t t = 0; t < in.size(); ++t) batch.add(in[t], static_cast<int32_t>(t), 0, /*logits=*/true);
    ctx.clear();
    ctx.decode(batch);
    const int64_t n = batch.size();
    if (pooling == hp.pooling && pooling != model::Pooling::None) {
      const std::span<const float> e = ctx.embeddings(0);
      report.rows.emplace_back(e.begin(), e.end());
    } else {
      // Every token is an output row: [n, n_embd].
      std::vector<float> states(static_cast<size_t>(n * n_embd));
      for (int64_t i = 0; i < n; ++i) {
        const std::span<const float> e = ctx.token_embeddings(i);
        std::copy(e.begin(), e.end(), states.begin() + i * n_embd);
      }
      if (pooling == model::Pooling::None) {
        for (int64_t i = 0; i < n; ++i) {
          report.rows.emplace_back(states.begin() + i * n_embd, states.begin() + (i + 1) * n_embd);
        }
      } else {
        std::vector<int32_t> rows(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) rows[static_cast<size_t>(i)] = static_cast<int32_t>(i);
        std::vector<float> out(static_cast<size_t>(n_embd));
        model::pool_sequence(pooling, states.data(), rows.data(), n, n_embd, out.data());
        report.rows.push_back(std::move(out));
      }
    }
  }
  // A reranker's row is its score, not a vector to normalize.
  if (pooling != model::Pooling::Rank) {
    for (std::vector<float>& row : report.rows) normalize_embedding(row, opt.normalize);
  }
  const std::string text = format_embeddings(report, opt.format);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

const CommandRegistrar kEmbed({"embed", "Embeddings of prompts (llama.cpp's llama-embedding)",
                               [](CLI::App& sub) -> std::function<int()> {
                                 auto opt = std::make_shared<EmbedOptions>();
                                 opt->model.n_batch = 2048;
                                 add_model_options(sub, opt->model,
                                                   kModelArgument | kGpuOptions | kCacheOptions | kMemoryOptions);
                                 sub.add_option("-p,--prompt", opt->prompts, "Prompt text (repeatable)");
                                 sub.add_option("-f,--file", opt->file, "File of prompts");
                                 sub.add_option("--embd-separator", opt->separator,
                                                "Separator of prompts within one text (default: newline)");
                                 sub.add_option("--pooling", opt->pooling, "none, mean, cls, last or rank (a reranker's score; default: the model's)");
                                 sub.add_option("--embd-normalize", opt->normalize,
                                                "-1 none, 0 max-abs int16, 1 taxicab, 2 euclidean, >2 p-norm");
                                 sub.add_option("--embd-output-format", opt->format, "text, json or array");
                                 sub.add_option("-c,--ctx-size", opt->model.n_ctx, "Context size (decoders; 0: the model's)");
                                 sub.add_option("-b,--batch-size", opt->model.n_batch, "Most tokens of one prompt");
                                 sub.add_option("-t,--threads", opt->model.n_threads, "Threads (0: all CPUs)");
                                 return [opt] { return run_embed(*opt); };
                               }});

}  // namespace
}  // namespace ferrite::tools
