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

namespace ferrite::model {

class Model {
 public:
  // Opens and binds a model. Throws IoError / FormatError / ModelError.
  static std::shared_ptr<const Model> load(const std::string& path);
  // Binds an opened (or parsed, File::parse) file; its bytes must outlive
  // the model. Throws FormatError / ModelError.
  static std::shared_ptr<const Model> from_file(gguf::File file);

  const gguf::File& file() const { return *file_; }
  const HParams& hparams() const { return hp_; }
  const Architecture& arch() const { return *arch_; }
  // The weights repacked for the CPU's products at load.
  const PackedWeights& packed() const { return *packed_; }

  // See Architecture::forward.
  void forward(const ForwardBatch& batch, const KvView& kv, cpu::ThreadPool& pool, Workspace& ws,
               float* logits) const {
    arch_->forward(batch, kv, pool, ws, logits);
  }

 private:
  Model() = default;
  std::unique_ptr<gguf::File> file_;
  std::unique_ptr<PackedWeights> packed_;  // before arch_: bound tensors point into it
  HParams hp_;
  std::unique_ptr<Architecture> arch_;
};

}  // namespace ferrite::model
