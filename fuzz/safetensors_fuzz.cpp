// libFuzzer target for the converter's readers of untrusted checkpoint
// files: any byte string must either parse or raise a ferrite::Error, never
// crash, hang or allocate without bound. The input is read as a safetensors
// file (every float tensor of at most 1M elements converted to f32, as the
// converter would) and as a SentencePiece tokenizer.model.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "convert/safetensors.h"
#include "convert/spm_model.h"
#include "core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ferrite::convert;
  try {
    const Checkpoint c = Checkpoint::from_file(SafetensorsFile::parse(data, size, "fuzz.safetensors"));
    std::vector<float> buf;
    for (const StTensor* t : c.tensors()) {
      if (!t->is_float() || t->n_elements > (1u << 20)) continue;
      buf.resize(t->n_elements);
      to_f32(*t, buf.data());
    }
  } catch (const ferrite::Error&) {
  }
  try {
    const SpmModel m = SpmModel::parse(data, size, "fuzz.model");
    volatile size_t sink = 0;
    for (const SpmPiece& p : m.pieces) sink = sink + p.piece.size();
  } catch (const ferrite::Error&) {
  }
  return 0;
}
