// ferrite_generate: the runtime's token loop (runtime::Sequence prefill and
// step with runtime::Generation: sampler chain, grammar, streaming
// detokenizer, stop strings), the same one ferrite run and Python drive.
#include <atomic>

#include "capi/handles.h"
#include "runtime/sequence.h"

using namespace ferrite;
using capi::need;

namespace {

ferrite_finish finish_code(runtime::FinishReason r) {
  switch (r) {
    case runtime::FinishReason::kNone: return FERRITE_FINISH_NONE;
    case runtime::FinishReason::kEndOfGeneration: return FERRITE_FINISH_EOG;
    case runtime::FinishReason::kStopString: return FERRITE_FINISH_STOP;
    case runtime::FinishReason::kGrammar: return FERRITE_FINISH_GRAMMAR;
    case runtime::FinishReason::kLength: return FERRITE_FINISH_LENGTH;
    case runtime::FinishReason::kContextFull: return FERRITE_FINISH_CONTEXT;
    case runtime::FinishReason::kInterrupted: return FERRITE_FINISH_INTERRUPTED;
  }
  return FERRITE_FINISH_NONE;
}

}  // namespace

extern "C" {

ferrite_status ferrite_generate(ferrite_context* ctx, int32_t seq_id, const int32_t* prompt, size_t n_prompt,
                                const ferrite_sampler_params* params, int64_t n_predict, ferrite_text_fn on_text,
                                void* user_data, ferrite_generation_result* result) noexcept {
  if (result != nullptr) *result = ferrite_generation_result{};
  return capi::guarded([&] {
    auto& c = need(ctx, "ctx");
    runtime::Context& rc = *c.ctx;
    if (n_prompt == 0) throw InvalidArgument("the prompt has no tokens");
    need(prompt, "prompt");
    if (seq_id < 0 || seq_id >= runtime::kMaxSequences) {
      throw InvalidArgument("seq_id " + std::to_string(seq_id) + " is outside 0.." +
                            std::to_string(runtime::kMaxSequences - 1));
    }
    if (rc.model().arch().is_encoder()) throw InvalidArgument("this model is an encoder: it computes embeddings");
    std::span<const int32_t> tokens(prompt, n_prompt);
    for (int32_t t : tokens) capi::check_token(*c.model->tok, t);
    // An encoder-decoder (t5): the prompt is the encoder's input; the decoder starts from its start token.
    int32_t start = -1;
    if (rc.has_encoder()) {
      rc.encode(tokens, seq_id);
      start = rc.decoder_start_token(c.model->tok->bos());
      tokens = std::span<const int32_t>(&start, 1);
    }

    runtime::GenerationParams gp = params ? params->gen : runtime::GenerationParams{};
    gp.n_predict = n_predict < 0 ? -1 : n_predict;
    std::atomic<bool> stop{false};
    gp.interrupt = &stop;
    runtime::Generation gen(*c.model->vocab, gp,
                            {.n_ctx = static_cast<int32_t>(rc.n_ctx()),
                             .n_ctx_train = static_cast<int32_t>(rc.model().hparams().n_ctx_train)},
                            tokens);

    // The sequence may use the cells no other sequence holds.
    rc.clear(seq_id);
    const int64_t free_cells = rc.cache().size() - rc.cache().used();
    if (static_cast<int64_t>(tokens.size()) > free_cells) {
      throw capi::Failure(FERRITE_ERR_CONTEXT_FULL, "the prompt has " + std::to_string(n_prompt) + " tokens; " +
                                                        std::to_string(free_cells) + " cells of " +
                                                        std::to_string(rc.n_ctx()) + " are free");
    }
    runtime::Sequence seq(rc, {.seq = seq_id, .n_cells = free_cells, .context_shift = false});
    std::span<const float> logits = seq.prefill(tokens);
    while (!gen.done()) {
      const runtime::GenerationStep step = seq.step(gen, logits);
      if (on_text != nullptr && !step.text.empty() && on_text(step.text.data(), step.text.size(), user_data) != 0) {
        stop.store(true);
      }
    }
    if (result != nullptr) {
      result->finish = finish_code(gen.finish());
      result->n_prompt = static_cast<int64_t>(n_prompt);
      result->n_generated = gen.n_generated();
    }
  });
}

}  // extern "C"
