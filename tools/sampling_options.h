// llama.cpp's sampling options for any subcommand that generates text:
//
//   sampling::SamplerParams sp;
//   add_sampling_options(sub, sp);      // --temp, --top-k, ..., --samplers, --logit-bias
//   ...
//   sampling::Sampler sampler(sp, sampling_model_info(tokenizer, n_ctx, n_ctx_train));
#pragma once

#include <cstdint>

#include <CLI/CLI.hpp>

#include "sampling/sampler.h"
#include "tokenizer/tokenizer.h"

namespace ferrite::tools {

// Adds the options (group "Sampling") writing into `params`, which must
// outlive the parse. Malformed values are CLI parse errors; the remaining
// checks happen when the Sampler is built (validate()).
void add_sampling_options(CLI::App& app, sampling::SamplerParams& params);

// What the sampler chain needs from the model: vocabulary size, newline
// token, token pieces and a tokenizer for DRY's breakers, context sizes for
// the -1 windows. `tok` must outlive the Sampler's construction only.
sampling::ModelInfo sampling_model_info(const tokenizer::Tokenizer& tok, int32_t n_ctx, int32_t n_ctx_train);

}  // namespace ferrite::tools
