// Context's path for encoder-decoders (t5), llama.cpp's llama_encode: the
// encoder's pass over a sequence's source tokens, its output rows kept per
// sequence, and those rows handed to each decoder pass (ForwardBatch::enc)
// for the cross-attention.
#include <string>

#include "core/error.h"
#include "runtime/context.h"

namespace ferrite::runtime {

void Context::encode(std::span<const int32_t> tokens, int seq) {
  const model::HParams& hp = model_->hparams();
  if (!has_encoder()) {
    throw InvalidArgument(hp.arch + " is not an encoder-decoder: encode() needs one (t5)");
  }
  const auto n = static_cast<int64_t>(tokens.size());
  if (n == 0) throw InvalidArgument("nothing to encode");
  if (n > params_.n_batch) {
    throw InvalidArgument("the encoder evaluates its input in one pass: " + std::to_string(n) +
                          " tokens exceed the batch size " + std::to_string(params_.n_batch));
  }
  if (seq < 0 || seq >= kMaxSequences) {
    throw InvalidArgument("sequence id " + std::to_string(seq) + " out of range 0.." +
                          std::to_string(kMaxSequences - 1));
  }
  for (int32_t t : tokens) {
    if (t < 0 || t >= hp.n_vocab) {
      throw InvalidArgument("token id " + std::to_string(t) + " is outside the vocabulary (0.." +
                            std::to_string(hp.n_vocab - 1) + ")");
    }
  }
  std::vector<int32_t> pos(static_cast<size_t>(n)), rows(static_cast<size_t>(n));
  const std::vector<int32_t> seqs(static_cast<size_t>(n), seq);
  for (int64_t i = 0; i < n; ++i) pos[static_cast<size_t>(i)] = rows[static_cast<size_t>(i)] = static_cast<int32_t>(i);
  model::ForwardBatch fb;
  fb.tokens = tokens.data();
  fb.pos = pos.data();
  fb.n_tokens = n;
  fb.out_rows = rows.data();
  fb.n_out = n;
  fb.seq = seqs.data();
  fb.encode = true;
  std::vector<float> out(static_cast<size_t>(n * hp.n_embd));
  model::run_step(model_->arch(), *placement_, fb, model::KvView{}, out.data());

  // Replace the sequence's rows, keeping the others'.
  std::vector<float> states;
  std::vector<int32_t> owners;
  for (size_t r = 0; r < enc_seq_.size(); ++r) {
    if (enc_seq_[r] == seq) continue;
    owners.push_back(enc_seq_[r]);
    states.insert(states.end(), enc_states_.begin() + static_cast<std::ptrdiff_t>(r * hp.n_embd),
                  enc_states_.begin() + static_cast<std::ptrdiff_t>((r + 1) * hp.n_embd));
  }
  states.insert(states.end(), out.begin(), out.end());
  owners.insert(owners.end(), seqs.begin(), seqs.end());
  enc_states_ = std::move(states);
  enc_seq_ = std::move(owners);
}

int32_t Context::decoder_start_token(int32_t bos) const {
  const int32_t start = model_->hparams().decoder_start_token;
  return start >= 0 ? start : bos;
}

void Context::attach_encoder_output(const Batch& batch, int64_t begin, int64_t n, model::ForwardBatch& fb) const {
  for (int64_t t = 0; t < n; ++t) {
    const int s = batch.seq[static_cast<size_t>(begin + t)];
    bool found = false;
    for (int32_t o : enc_seq_) found = found || o == s;
    if (!found) {
      throw InvalidArgument("sequence " + std::to_string(s) + " has no encoder output: call encode() first");
    }
  }
  fb.seq = batch.seq.data() + begin;
  fb.enc = enc_states_.data();
  fb.enc_seq = enc_seq_.data();
  fb.n_enc = static_cast<int64_t>(enc_seq_.size());
}

}  // namespace ferrite::runtime
