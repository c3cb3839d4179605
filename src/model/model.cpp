#include "model/model.h"

#include "cpu/features.h"
#include "gguf/metadata.h"

namespace ferrite::model {

std::shared_ptr<const Model> Model::load(const std::string& path) { return from_file(gguf::File::open(path)); }

std::shared_ptr<const Model> Model::from_file(gguf::File file) {
  cpu::apply_isa_env();  // the repacking below depends on the kernels' level
  std::shared_ptr<Model> m(new Model());
  m->file_ = std::make_unique<gguf::File>(std::move(file));
  const gguf::Metadata md(*m->file_);
  const ArchFactory make = find_architecture(md.architecture());
  m->hp_ = read_hparams(md);
  m->packed_ = PackedWeights::build(*m->file_);
  m->arch_ = make(*m->file_, m->hp_);
  return m;
}

}  // namespace ferrite::model
