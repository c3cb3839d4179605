// Weights repacked at load for the CPU's products (cpu/packed/packed.h): every
// Q4_0/Q8_0/F16/BF16 matrix whose rows come in groups of 16 is copied once into the
// interleaved layout, and the plain pages of the mapping are handed back to
// the kernel (they are re-read from the file only if something touches them:
// an embedding row lookup, an upload to a GPU). Resident memory stays the
// size of the weights.
//
// WeightBinder finds a tensor's packed copy with find_packed() while an
// architecture binds its weights; the copies live as long as the Model.
// The load's switches (backend/switches.h: FERRITE_REPACK,
// FERRITE_REPACK_FLOAT) turn repacking off, or keep F16/BF16 matrices plain
// (see set_float_repack).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "cpu/packed/packed.h"
#include "gguf/file.h"

namespace ferrite::model {

class PackedWeights {
 public:
  // Packs the file's packable matrices when this CPU has a kernel for the
  // packed layout and `repack` is on (F16/BF16 ones only with repack_float,
  // unless set_float_repack says otherwise); otherwise holds nothing.
  // The token embedding is packed only when it doubles as the output matrix
  // (no output.weight). Throws IoError when memory cannot be had.
  static std::unique_ptr<PackedWeights> build(const gguf::File& file, bool repack = true, bool repack_float = true);

  ~PackedWeights();
  PackedWeights(const PackedWeights&) = delete;
  PackedWeights& operator=(const PackedWeights&) = delete;

  // The packed copy of t, or nullptr.
  const uint8_t* find(const gguf::TensorInfo* t) const;
  uint64_t packed_bytes() const { return bytes_; }
  size_t count() const { return copies_.size(); }

 private:
  PackedWeights() = default;
  std::unordered_map<const gguf::TensorInfo*, cpu::PackedBuffer> copies_;
  uint64_t bytes_ = 0;
};

// F16/BF16 matrices are repacked by default: their packed products sum in
// f32 in another order than the plain tiles, which reproduce llama.cpp's
// (tinyBLAS) order bit for bit. The difference is f32 rounding, which the
// f16 roundings of the KV cache and of the activations turn into last-bit
// flips of f16 values: logits move by ~3e-4 of their scale. Off
// (FERRITE_REPACK_FLOAT=0, or set_float_repack(false)), products keep
// llama.cpp's order (the golden tests check both). Applies to later loads;
// nullopt returns to the load's switch.
void set_float_repack(std::optional<bool> on);

// The packed copy of t held by a live PackedWeights, or nullptr.
const uint8_t* find_packed(const gguf::TensorInfo* t);

}  // namespace ferrite::model
