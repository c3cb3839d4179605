// A loaded model: the mapped GGUF file, its hyperparameters and the
// architecture that computes it. Immutable after load and shareable between
// contexts (src/runtime) that each own a KV cache and scratch memory.
#pragma once

#include <memory>
#include <string>

#include "gguf/file.h"
#include "model/architecture.h"
#include "model/hparams.h"
#include "model/packed_weights.h"
#include "model/workspace.h"
#include "backend/switches.h"
#include "cpu/thread_pool.h"

namespace ferrite::model {

class Model {
 public:
  // Opens and binds a model, repacking its weights as the switches say
  // (default: the environment's). Throws IoError / FormatError / ModelError.
  static std::shared_ptr<const Model> load(const std::string& path,
                                           const backend::Switches& sw = backend::env_switches());
  // Binds an opened (or parsed, File::parse) file; its bytes must outlive
  // the model. Throws FormatError / ModelError.
  static std::shared_ptr<const Model> from_file(gguf::File file,
                                                const backend::Switches& sw = backend::env_switches());

  const gguf::File& file() const { return *file_; }
  const HParams& hparams() const { return hp_; }
  const Architecture& arch() const { return *arch_; }
  // The weights repacked for the CPU's products at load.
  const PackedWeights& packed() const { return *packed_; }

  // The sizes the backends need (step.h dims_of).
  const backend::ModelDims& dims() const { return dims_; }

  // One forward pass on the CPU backend (Architecture::forward; the tests'
  // and single-sequence tools' entry point: the runtime's contexts place
  // layers on backends themselves, model/step.h).
  void forward(const ForwardBatch& batch, const KvView& kv, cpu::ThreadPool& pool, Workspace& ws,
               float* logits) const;

 private:
  Model() = default;
  std::unique_ptr<gguf::File> file_;
  std::unique_ptr<PackedWeights> packed_;  // before arch_: bound tensors point into it
  HParams hp_;
  backend::ModelDims dims_;
  std::unique_ptr<Architecture> arch_;
};

}  // namespace ferrite::model
