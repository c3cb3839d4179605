#include "model/step.h"

#include "core/error.h"
#include "model/architecture.h"

namespace ferrite::model {

Placement::Placement(backend::Backend& all) : front_(&all), back_(&all), first_back_(0), list_{&all} {}

Placement::Placement(backend::Backend& front, backend::Backend& back, int64_t first_back)
    : front_(&front), back_(&back), first_back_(first_back) {
  if (first_back > 0) list_.push_back(front_);
  if (back_ != front_ || first_back <= 0) list_.push_back(back_);
}

Step::Step(const Placement& p, const ForwardBatch& b, const KvView& k)
    : batch(b), kv(k), placement_(p), cur_(&p.at(0)) {}

void Step::enter_layer(int64_t il, backend::Act& x) {
  backend::Backend& to = placement_.at(il);
  if (&to == cur_) return;
  const backend::Act y = to.buffer(x.buf, x.rows, x.cols);
  const float* src = cur_->host_data(x);
  const float* dst = to.host_data(y);
  if (src != nullptr) {
    to.from_host(src, y);
  } else if (dst != nullptr) {
    cur_->to_host(x, const_cast<float*>(dst));
  } else {
    staging_.resize(static_cast<size_t>(x.size()));
    cur_->to_host(x, staging_.data());
    to.from_host(staging_.data(), y);
  }
  x = y;
  cur_ = &to;
}

int Step::prepare_rope(const backend::RopeConfig& c) {
  int id = backend::kNoRope;
  for (backend::Backend* b : placement_.backends()) {
    const int got = b->prepare_rope(c);
    if (id != backend::kNoRope && got != id) throw Error("backends numbered a step's RoPE tables differently");
    id = got;
  }
  return id;
}

backend::ModelDims dims_of(const HParams& hp) {
  backend::ModelDims d;
  d.n_embd = hp.n_embd;
  d.n_layer = hp.n_layer;
  d.n_vocab = hp.n_vocab;
  d.n_head = hp.n_head;
  d.n_head_kv = hp.n_head_kv;
  d.head_dim = hp.head_dim;
  d.n_expert = hp.n_expert;
  d.n_expert_used = hp.n_expert_used;
  d.norm_eps = hp.norm_eps;
  d.norm_rms_eps = hp.norm_rms_eps;
  return d;
}

void run_step(const Architecture& arch, const Placement& p, const ForwardBatch& batch, const KvView& kv,
              float* logits, float* hidden) {
  const std::vector<backend::Backend*>& bs = p.backends();
  // A second attempt only where a backend asks for it (Backend::end_step).
  for (int attempt = 0; attempt < 2; ++attempt) {
    for (backend::Backend* b : bs) b->begin_step(batch, kv);
    try {
      bool done = false;
      if (bs.size() == 1 && hidden == nullptr && batch.lora == nullptr && arch.decoder_desc() != nullptr) {
        const backend::WholeStep whole{&batch, &kv, arch.decoder_desc(), logits};
        done = bs[0]->run_whole_step(whole);
      }
      if (!done) {
        Step s(p, batch, kv);
        if (hidden != nullptr) {
          arch.forward_hidden(s, logits, hidden);
        } else {
          arch.forward(s, logits);
        }
      }
    } catch (...) {
      for (backend::Backend* b : bs) b->cancel_step();
      throw;
    }
    bool complete = true;
    for (backend::Backend* b : bs) complete = b->end_step() && complete;
    if (complete) return;
  }
  throw Error("a backend could not complete a step in two attempts");
}

}  // namespace ferrite::model
