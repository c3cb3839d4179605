#include "speculative_options.h"

#include <algorithm>

#include "core/error.h"

namespace ferrite::tools {

void add_speculative_options(CLI::App& sub, SpeculativeOptions& o) {
  const std::string g = "Speculative decoding";
  sub.add_option("--model-draft", o.model_draft, "Draft model for speculative decoding (also -md)")->group(g);
  sub.add_option("--n-gpu-layers-draft,--gpu-layers-draft", o.n_gpu_layers_draft,
                 "Draft model layers on the GPU: a number or all (also -ngld)")
      ->group(g);
  sub.add_option("--ctx-size-draft", o.ctx_size_draft, "Draft model context size (also -cd; 0: the target's)")
      ->group(g);
  sub.add_option("--spec-type", o.spec_type,
                 "none, draft (a draft model, the default with -md) or ngram-simple (prompt lookup)")
      ->group(g);
  sub.add_option("--draft-max,--draft-n,--draft", o.params.n_max, "Draft tokens per verification at most (16)")
      ->group(g);
  sub.add_option("--draft-min,--draft-n-min", o.params.n_min, "Shorter drafts are not verified (0)")->group(g);
  sub.add_option("--draft-p-min", o.p_min,
                 "Stop drafting where the draft model's best token is less likely than this (0.75)")
      ->group(g);
  sub.add_option("--spec-ngram-simple-size-n", o.ngram.size_n, "ngram-simple: tokens looked up (12)")->group(g);
  sub.add_option("--spec-ngram-simple-size-m", o.ngram.size_m, "ngram-simple: tokens proposed at most (48)")
      ->group(g);
}

namespace {

std::string resolved_type(const SpeculativeOptions& o) {
  const std::string type = o.spec_type.empty() ? (o.model_draft.empty() ? "none" : "draft") : o.spec_type;
  if (type != "none" && type != "draft" && type != "ngram-simple") {
    throw InvalidArgument("--spec-type must be none, draft or ngram-simple, not '" + type + "'");
  }
  if (type == "ngram-simple" && !o.model_draft.empty()) {
    throw InvalidArgument("--spec-type ngram-simple uses no draft model: drop -md");
  }
  if (type == "draft" && o.model_draft.empty()) throw InvalidArgument("--spec-type draft needs a draft model (-md FILE)");
  if (type == "none" && !o.model_draft.empty()) throw InvalidArgument("--spec-type none: drop -md");
  return type;
}

// The draft model, its vocabulary checked, and its context's parameters
// (n_ctx: -cd, else `n_ctx`).
struct DraftModel {
  std::shared_ptr<const model::Model> model;
  runtime::ContextParams context;
};

DraftModel load_draft_model(const SpeculativeOptions& o, const ModelOptions& target_options, int64_t n_ctx,
                            int n_threads, const tokenizer::Tokenizer& target_tok) {
  if (!(o.p_min >= 0.0f && o.p_min <= 1.0f)) {
    throw InvalidArgument("--draft-p-min must be in [0, 1], not " + std::to_string(o.p_min));
  }
  if (o.ctx_size_draft < 0) throw InvalidArgument("--ctx-size-draft must not be negative");
  ModelOptions mo = target_options;
  mo.model = o.model_draft;
  mo.hf_repo.clear();
  mo.hf_file.clear();
  mo.n_gpu_layers = o.n_gpu_layers_draft;
  mo.fit = false;
  DraftModel d;
  d.model = load_model_file(mo, model_path(mo));
  if (d.model->arch().is_encoder()) throw InvalidArgument("the draft model is an encoder: it cannot draft tokens");
  runtime::check_draft_vocab(target_tok, tokenizer::Tokenizer::from_gguf(d.model->file()));
  runtime::ContextParams& c = d.context;
  c.n_ctx = o.ctx_size_draft > 0 ? o.ctx_size_draft : n_ctx;
  c.n_batch = target_options.n_batch;
  c.n_threads = n_threads;
  c.n_gpu_layers = gpu_layers(mo, *d.model, c);
  return d;
}

}  // namespace

LoadedDrafter load_drafter(const SpeculativeOptions& o, const ModelOptions& target_options,
                           const runtime::Context& target, const tokenizer::Tokenizer& target_tok) {
  runtime::validate(o.params);
  LoadedDrafter d;
  d.params = o.params;
  const std::string type = resolved_type(o);
  if (type == "ngram-simple") d.drafter = std::make_unique<runtime::NgramDrafter>(o.ngram);
  if (type != "draft") return d;
  DraftModel m = load_draft_model(o, target_options, target.n_ctx(), target.n_threads(), target_tok);
  d.model = m.model;
  d.context = std::make_unique<runtime::Context>(m.model, m.context);
  d.drafter = std::make_unique<runtime::ModelDrafter>(*d.context, runtime::DraftModelParams{.p_min = o.p_min});
  return d;
}

SlotDrafters slot_drafters(const SpeculativeOptions& o, const ModelOptions& target_options, int n_threads,
                           const tokenizer::Tokenizer& target_tok) {
  runtime::validate(o.params);
  const std::string type = resolved_type(o);
  if (type == "none") return {};
  if (type == "ngram-simple") {
    runtime::NgramDrafter check(o.ngram);  // bad sizes fail now, not in the engine
    const runtime::NgramParams p = o.ngram;
    return [p](int, int64_t, int64_t) { return std::make_unique<runtime::NgramDrafter>(p); };
  }
  auto m = std::make_shared<DraftModel>(load_draft_model(o, target_options, 0, n_threads, target_tok));
  auto ctx = std::make_shared<std::unique_ptr<runtime::Context>>();
  const float p_min = o.p_min;
  // One draft context for every slot, made at the first slot's call (when
  // the engine's context size is known); slot i drafts in its sequence i.
  return [m, ctx, p_min](int slot, int64_t slot_ctx, int64_t n_ctx) -> std::unique_ptr<runtime::Drafter> {
    if (!*ctx) {
      runtime::ContextParams c = m->context;
      if (c.n_ctx == 0) c.n_ctx = n_ctx;
      c.n_seq_max = static_cast<int>(std::max<int64_t>(1, n_ctx / slot_ctx));  // a sliding window per slot
      *ctx = std::make_unique<runtime::Context>(m->model, c);
    }
    runtime::Context& dc = **ctx;
    const int64_t n_slots = std::max<int64_t>(1, n_ctx / slot_ctx);
    const int64_t cells = dc.n_ctx() / n_slots;
    dc.cache().set_sequence_home(slot, slot * cells, cells);
    return std::make_unique<runtime::ModelDrafter>(
        dc, runtime::DraftModelParams{.p_min = p_min, .seq = slot, .n_cells = cells});
  };
}

std::string speculative_summary(const char* name, const runtime::SpeculativeStats& s) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s: %lld drafted, %lld accepted (%.1f%%) in %lld rounds", name,
                static_cast<long long>(s.n_drafted), static_cast<long long>(s.n_accepted), 100.0 * s.acceptance(),
                static_cast<long long>(s.n_rounds));
  return buf;
}

}  // namespace ferrite::tools
