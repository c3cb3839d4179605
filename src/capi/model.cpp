// Loading a model (with progress and cancellation) and its facts.
#include "capi/handles.h"
#include "model/load_progress.h"
#include "runtime/offload.h"

namespace ferrite::capi {
namespace {

// Thrown out of the progress callback to stop the load; load_with_progress
// unwinds (the mapped file and the partly built model are released).
class Cancelled : public Failure {
 public:
  Cancelled() : Failure(FERRITE_ERR_CANCELLED, "the model load was cancelled by the progress callback") {}
};

std::shared_ptr<const model::Model> load(const std::string& path, const ferrite_model_params& p) {
  if (p.progress == nullptr && p.use_mmap) return model::Model::load(path);
  // use_mmap 0 without a callback: the same page reads, unreported.
  const ferrite_progress_fn fn = p.progress;
  void* user = p.progress_user_data;
  return model::load_with_progress(path, [fn, user](uint64_t done, uint64_t total) {
    if (fn != nullptr && fn(done, total, user) != 0) throw Cancelled();
  });
}

}  // namespace
}  // namespace ferrite::capi

using namespace ferrite;
using capi::need;

extern "C" {

ferrite_model_params ferrite_model_default_params(void) noexcept {
  ferrite_model_params p{};
  p.n_gpu_layers = 0;
  p.use_mmap = 1;
  return p;
}

ferrite_status ferrite_model_load(const char* path, const ferrite_model_params* params, ferrite_model** out) noexcept {
  if (out != nullptr) *out = nullptr;
  return capi::guarded([&] {
    capi::need_text(path, "path");
    need(out, "out");
    const ferrite_model_params p = params ? *params : ferrite_model_default_params();
    if (p.n_gpu_layers < runtime::kAllLayers) {
      throw InvalidArgument("n_gpu_layers must be -1 (all) or more, got " + std::to_string(p.n_gpu_layers));
    }
    auto s = std::make_shared<capi::ModelState>();
    s->model = capi::load(path, p);
    s->tok = std::make_unique<tokenizer::Tokenizer>(tokenizer::Tokenizer::from_gguf(s->model->file()));
    s->vocab = std::make_unique<runtime::GenerationVocab>(*s->tok);
    s->n_gpu_layers = runtime::gpu_offload_available() ? p.n_gpu_layers : 0;
    s->architecture = s->model->hparams().arch;
    *out = new ferrite_model{std::move(s)};
  });
}

void ferrite_model_free(ferrite_model* model) noexcept { delete model; }

int32_t ferrite_model_n_vocab(const ferrite_model* m) noexcept { return m ? m->state->tok->n_vocab() : 0; }
int32_t ferrite_model_n_embd(const ferrite_model* m) noexcept {
  return m ? static_cast<int32_t>(m->state->model->hparams().n_embd) : 0;
}
int32_t ferrite_model_n_layer(const ferrite_model* m) noexcept {
  return m ? static_cast<int32_t>(m->state->model->hparams().n_layer) : 0;
}
int32_t ferrite_model_n_ctx_train(const ferrite_model* m) noexcept {
  return m ? static_cast<int32_t>(m->state->model->hparams().n_ctx_train) : 0;
}
const char* ferrite_model_architecture(const ferrite_model* m) noexcept {
  return m ? m->state->architecture.c_str() : "";
}

}  // extern "C"
