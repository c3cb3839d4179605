// An architecture binds its weights at load (checking every shape) and
// describes the forward pass of a batch once, as operations of the backend
// interface (backend/ops.h) that every backend runs: the CPU, CUDA. One
// small file per family (arch_*.cpp); registry.cpp maps
// `general.architecture` to its factory.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "core/error.h"
#include "gguf/file.h"
#include "model/forward.h"
#include "model/hparams.h"
#include "model/step.h"

namespace ferrite::model {

class Architecture {
 public:
  virtual ~Architecture() = default;

  // Computes the batch (s.batch), writing its keys/values into the cache,
  // and the logits of the batch's output rows into host memory logits
  // [n_out, n_vocab]. Encoders write hidden states [n_out, n_embd] instead.
  virtual void forward(Step& s, float* logits) const = 0;

  // Encoders (bert) attend over whole sequences within one batch, use no KV
  // cache, and write hidden states [n_out, n_embd] instead of logits.
  virtual bool is_encoder() const { return false; }

  // Encoder-decoders (t5): a pass with ForwardBatch::encode runs the encoder
  // over whole sequences (no cache) and writes its final states [n_out,
  // n_embd]; the other passes are the decoder's, whose cross-attention reads
  // what the runtime kept of them (ForwardBatch::enc).
  virtual bool has_encoder() const { return false; }

  // Decoders that can hand back their final hidden states (embeddings, as
  // llama.cpp's: after the output norm) say so here and implement
  // forward_hidden(): forward() that also writes those states of the output
  // rows, hidden [n_out, n_embd], and skips the logits when logits is null.
  virtual bool has_hidden_states() const { return false; }
  virtual void forward_hidden(Step& /*s*/, float* /*logits*/, float* /*hidden*/) const {
    throw InvalidArgument("this architecture does not give its hidden states");
  }

  // The model as a pre-norm decoder in data form (backend.h), for a backend
  // that runs whole steps itself; null when the family is not one.
  virtual const backend::DecoderDesc* decoder_desc() const { return nullptr; }
};

// Builds an architecture from an opened file and its common hparams (which
// the factory may complete: RoPE pairing, vocabulary size from the tensors).
using ArchFactory = std::unique_ptr<Architecture> (*)(const gguf::File& file, HParams& hp);

// The factory for `general.architecture`; throws ModelError naming the
// architecture and listing the supported ones when unknown.
ArchFactory find_architecture(const std::string& name);

// Names of every supported architecture, sorted.
std::vector<std::string> supported_architectures();

}  // namespace ferrite::model
