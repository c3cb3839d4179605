// The speculative-decoding options of run, chat and serve, with llama.cpp's
// names: -md/--model-draft FILE, -ngld/--n-gpu-layers-draft N|all,
// -cd/--ctx-size-draft N, --draft-max/--draft-n N, --draft-min N,
// --draft-p-min P, --spec-type none|draft|ngram-simple and
// --spec-ngram-simple-size-n/-m N.
//
//   SpeculativeOptions so;
//   add_speculative_options(sub, so);
//   ... LoadedDrafter d = load_drafter(so, model_options, ctx, tok);
//   if (d.drafter) runtime::Speculation spec(*d.drafter, d.params);
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "model_options.h"
#include "runtime/context.h"
#include "runtime/drafter.h"
#include "runtime/speculative.h"
#include "tokenizer/tokenizer.h"

namespace ferrite::tools {

struct SpeculativeOptions {
  std::string model_draft;                 // -md
  std::string n_gpu_layers_draft = "0";    // -ngld: a number or "all"
  int64_t ctx_size_draft = 0;              // -cd (0: the target context's size)
  std::string spec_type;                   // "": draft with -md, else none
  runtime::SpeculativeParams params;       // --draft-max, --draft-min
  float p_min = 0.75f;                     // --draft-p-min
  runtime::NgramParams ngram;              // --spec-ngram-simple-size-n/-m
};

void add_speculative_options(CLI::App& sub, SpeculativeOptions& o);

// The drafter the options ask for (and the draft model's context), or none.
struct LoadedDrafter {
  std::shared_ptr<const model::Model> model;
  std::unique_ptr<runtime::Context> context;
  std::unique_ptr<runtime::Drafter> drafter;  // null: no speculation
  runtime::SpeculativeParams params;
};

// Loads the draft model (its vocabulary checked against `target_tok`, its
// context sized like `target`'s unless -cd) or sets up lookup. Throws
// InvalidArgument for bad values, an unknown --spec-type, --spec-type draft
// without -md, or a draft vocabulary that differs from the target's.
LoadedDrafter load_drafter(const SpeculativeOptions& o, const ModelOptions& target_options,
                           const runtime::Context& target, const tokenizer::Tokenizer& target_tok);

// The server's: a drafter for each slot (engine's make_drafter), or an
// empty function for none. The draft model is loaded and checked now.
using SlotDrafters = std::function<std::unique_ptr<runtime::Drafter>(int slot, int64_t slot_ctx, int64_t n_ctx)>;
SlotDrafters slot_drafters(const SpeculativeOptions& o, const ModelOptions& target_options, int n_threads,
                           const tokenizer::Tokenizer& target_tok);

// "draft: 120 drafted, 96 accepted (80.0%) in 14 rounds".
std::string speculative_summary(const char* name, const runtime::SpeculativeStats& s);

}  // namespace ferrite::tools
