#include "model/model.h"

#include "cpu/backend/cpu_backend.h"
#include "cpu/features.h"
#include "cpu/packed/packed_matmul.h"
#include "gguf/metadata.h"
#include "model/step.h"

namespace ferrite::model {

std::shared_ptr<const Model> Model::load(const std::string& path, const backend::Switches& sw) {
  return from_file(gguf::File::open(path), sw);
}

std::shared_ptr<const Model> Model::from_file(gguf::File file, const backend::Switches& sw) {
  cpu::apply_isa_env();  // the repacking below depends on the kernels' level
  std::shared_ptr<Model> m(new Model());
  m->file_ = std::make_unique<gguf::File>(std::move(file));
  const gguf::Metadata md(*m->file_);
  const ArchFactory make = find_architecture(md.architecture());
  m->hp_ = read_hparams(md);
  cpu::configure_packed_kernels(sw.amx, sw.repack_q6k);
  m->packed_ = PackedWeights::build(*m->file_, sw.repack, sw.repack_float);
  m->arch_ = make(*m->file_, m->hp_);
  m->dims_ = dims_of(m->hp_);
  return m;
}

void Model::forward(const ForwardBatch& batch, const KvView& kv, cpu::ThreadPool& pool, Workspace& ws,
                    float* logits) const {
  cpu::CpuBackend cpu(dims_, pool, ws);
  run_step(*arch_, Placement(cpu), batch, kv, logits);
}

}  // namespace ferrite::model
