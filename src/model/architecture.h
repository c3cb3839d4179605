// An architecture binds its weights at load (checking every shape) and runs
// the forward pass of a batch. One small file per family (arch_*.cpp);
// registry.cpp maps `general.architecture` to its factory.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "cpu/thread_pool.h"
#include "gguf/file.h"
#include "model/forward.h"
#include "model/hparams.h"
#include "model/workspace.h"

namespace ferrite::model {

class Architecture {
 public:
  virtual ~Architecture() = default;

  // Computes the batch, writing its keys/values into the cache, and the
  // logits of the batch's output rows: logits [n_out, n_vocab].
  virtual void forward(const ForwardBatch& batch, const KvView& kv, cpu::ThreadPool& pool, Workspace& ws,
                       float* logits) const = 0;

  // Encoders (bert) attend over whole sequences within one batch, use no KV
  // cache, and write hidden states [n_out, n_embd] instead of logits.
  virtual bool is_encoder() const { return false; }

  // Decoders that can hand back their final hidden states (embeddings, as
  // llama.cpp's: after the output norm) say so here and implement
  // forward_hidden(): forward() that also writes those states of the output
  // rows, hidden [n_out, n_embd], and skips the logits when logits is null.
  virtual bool has_hidden_states() const { return false; }
  virtual void forward_hidden(const ForwardBatch& /*batch*/, const KvView& /*kv*/, cpu::ThreadPool& /*pool*/,
                              Workspace& /*ws*/, float* /*logits*/, float* /*hidden*/) const {
    throw InvalidArgument("this architecture does not give its hidden states");
  }

  // Backends that keep their layers' KV cache themselves (the GPU) let a
  // context shift re-rotate cached keys: calls rotate(row) on a host copy of
  // the K row (bytes of the cache's K type) of each of `cells` in layer
  // `layer`, and writes the rows back.
  virtual void rotate_cached_keys(int64_t layer, std::span<const int32_t> /*cells*/,
                                  const std::function<void(uint8_t* row)>& /*rotate*/) {
    throw InvalidArgument("layer " + std::to_string(layer) + " keeps no key cache of its own");
  }
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
