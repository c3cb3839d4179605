// A backend: one device's implementation of the operations (ops.h) and the
// life of a step on it. The runtime makes one per device a context uses (the
// CPU always; CUDA with -ngl), the model's placement (model/step.h) assigns
// layers to them, and each step runs as
//
//   for each backend: begin_step(batch, kv)     host inputs staged (tokens, cells, masks)
//   architecture.forward(step)                  operations, issued in order
//   for each backend: end_step()                waits; outputs are in host memory
//
// A backend may run the operations as they come (the CPU), queue them on a
// device, or record a step and replay it for the next step of the same
// shape (the CUDA backend's decode graphs: the model's code still runs each
// step, its operations then cost nothing but the host work they need).
// A backend may also take over a whole step (run_whole_step): the room for a
// persistent kernel that runs every layer of a decode step without kernel
// boundaries; the model hands it the declarative form of its layers.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "backend/ops.h"
#include "backend/step.h"
#include "core/error.h"

namespace ferrite::backend {

// A pre-norm decoder (model/decoder.h) as data, for a backend that runs
// whole steps itself: per layer the norm weights, attention and the dense or
// expert feed-forward, then the output norm and matrix. Pointers into the
// model, valid as long as it lives.
struct DecoderLayer {
  const Weight* attn_norm = nullptr;
  const AttentionWeights* attn = nullptr;
  const Weight* ffn_norm = nullptr;
  const FfnWeights* ffn = nullptr;  // SwiGLU; null for an expert layer
  const MoeWeights* moe = nullptr;  // null for a dense layer
};
struct DecoderDesc {
  const Weight* tok_embd = nullptr;
  const Weight* output_norm = nullptr;
  const Weight* output = nullptr;
  RopeConfig rope;
  std::vector<DecoderLayer> layers;
};

// A whole step offered to a backend before the operation stream.
struct WholeStep {
  const ForwardBatch* batch = nullptr;
  const KvView* kv = nullptr;
  const DecoderDesc* decoder = nullptr;  // null: the architecture has no such form
  float* logits = nullptr;               // [n_out, n_vocab] on the host
};

class Backend : public Ops {
 public:
  // "CPU", "CUDA" (for reports: llama-bench's backend column).
  virtual const char* name() const = 0;
  // The step's host inputs; before any operation of the step. kv.layers of
  // the layers this backend runs point into its memory or are ignored.
  virtual void begin_step(const ForwardBatch& batch, const KvView& kv) = 0;
  // After the step's last operation: waits for them; the outputs are then in
  // host memory. False (rare): the backend recorded the step instead of
  // running it and found the record unusable (a replayed graph whose buffers
  // moved); the caller runs the step again, which this backend then runs
  // directly (the cache writes of the first attempt are rewritten alike).
  virtual bool end_step() = 0;
  // Instead of end_step when the step failed (an operation threw): drops
  // what the step left half done (a graph being captured).
  virtual void cancel_step() {}
  // Runs the whole step and returns true, or returns false (the default) to
  // have it run as operations. Called only when this backend runs every layer.
  virtual bool run_whole_step(const WholeStep& /*step*/) { return false; }
  // A backend that keeps its layers' KV cache itself (CUDA) lets a context
  // shift re-rotate cached keys: calls rotate(row) on a host copy of the K
  // row (bytes of the cache's K type) of each of `cells` in layer `layer`,
  // and writes the rows back. Between steps only.
  virtual void rotate_cached_keys(int64_t layer, std::span<const int32_t> /*cells*/,
                                  const std::function<void(uint8_t* row)>& /*rotate*/) {
    throw InvalidArgument("layer " + std::to_string(layer) + " keeps no key cache on this backend");
  }
  // A backend that keeps K/V cells of its own: copies cell from[i] to
  // to[i] in each of its layers (KvCache::copy_cells). Between steps only.
  virtual void copy_cached_cells(std::span<const int32_t> /*from*/, std::span<const int32_t> /*to*/) {
    throw InvalidArgument("this backend keeps no KV cache");
  }
  // The same in the sliding-window layers' own cells (a window cache,
  // runtime/kv_cache.h; KvView::swa), in list order: a cell copied to may be
  // copied from later in the list (the window moving a sequence's cells).
  virtual void copy_window_cells(std::span<const int32_t> /*from*/, std::span<const int32_t> /*to*/) {
    throw InvalidArgument("this backend keeps no sliding-window KV cache");
  }
  // Saving and restoring a sequence (runtime/context_state.h): the K rows of
  // `cells` of layer `layer` (the window's cells for a sliding layer of a
  // window cache) to / from k, one after another, and their V rows (not
  // transposed) to / from v, in the bytes of the cache's types. Between steps only.
  virtual void read_cached_rows(int64_t layer, std::span<const int32_t> /*cells*/, uint8_t* /*k*/, uint8_t* /*v*/) {
    throw InvalidArgument("layer " + std::to_string(layer) + " keeps no KV cache on this backend");
  }
  virtual void write_cached_rows(int64_t layer, std::span<const int32_t> /*cells*/, const uint8_t* /*k*/,
                                 const uint8_t* /*v*/) {
    throw InvalidArgument("layer " + std::to_string(layer) + " keeps no KV cache on this backend");
  }
};

}  // namespace ferrite::backend
