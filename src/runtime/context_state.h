// Saving one sequence of a KV cache to a file and restoring it, possibly into
// another context of the same model (Context::save_sequence/load_sequence).
//
// File layout (little-endian):
//   header  u32 magic "FRSQ", u32 version, u32 n_layer, u32 n_embd_k,
//           u32 n_embd_v, u32 type_k, u32 type_v (TensorType), u32 n_vocab,
//           u32 n_tokens, u32 n_cells
//   i32 tokens[n_tokens]          the caller's tokens of the sequence (may be empty)
//   i32 pos[n_cells]              positions of the sequence's cells, in cache order
//   per layer: u16 K[n_cells, n_embd_k] (f16), u16 V[n_cells, n_embd_v] (f16)
// Version 2, from a sliding-window cache (kv_cache.h): after the header u32
// n_window_cells; after pos, i32 wpos[n_window_cells] (the window's
// positions, a subset of pos); the sliding layers' K and V are of those
// cells. A context with a window loads either version (of a version 1 file
// its window takes the positions the next token sees); one without refuses
// version 2 (InvalidArgument).
// Version 3, from a cache with a recurrent state (recurrent_state.h): as
// version 1, but a layer with a state holds, instead of K and V rows, f32
// conv[conv_floats] then ssm[ssm_floats] of the sequence's state slot. Such a
// cache loads and writes only version 3 (InvalidArgument otherwise).
// The size of the file must be exactly what the header implies; everything
// read is checked before anything is allocated or written to the cache.
// Layers kept by another backend (a GPU's) are read and written there
// through OffloadedRows; the file is the same.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <span>
#include <string>
#include <vector>

#include "runtime/kv_cache.h"

namespace ferrite::runtime {

constexpr uint32_t kSequenceStateMagic = 0x51535246;  // "FRSQ"
constexpr uint32_t kSequenceStateVersion = 1;
constexpr uint32_t kSequenceStateWindowVersion = 2;
constexpr uint32_t kSequenceStateRecurrentVersion = 3;

// The K/V rows of the layers a cache does not store (KvCache::keeps but not
// stores): read(layer, cells, k, v) copies the K rows of `cells` into k and
// their V rows (not transposed) into v, in the file's row bytes; write the
// other way (backend::Backend::read_cached_rows, write_cached_rows). The
// cells are the window's for its layers.
struct OffloadedRows {
  std::function<void(int64_t layer, std::span<const int32_t> cells, uint8_t* k, uint8_t* v)> read;
  std::function<void(int64_t layer, std::span<const int32_t> cells, const uint8_t* k, const uint8_t* v)> write;
};

// Writes the cells of `seq` (and `tokens`) to `path`. Throws IoError, and
// InvalidArgument for layers kept elsewhere without `off`.
void save_sequence_state(KvCache& cache, int64_t n_vocab, int seq, const std::string& path,
                         std::span<const int32_t> tokens, const OffloadedRows& off = {});

// Replaces sequence `seq` by the one saved in `path` and returns its saved
// tokens. Throws IoError, FormatError (not such a file, truncated, bad
// values), InvalidArgument (another model or cache type, too few free cells,
// layers kept elsewhere without `off`). On failure the sequence is left empty.
std::vector<int32_t> load_sequence_state(KvCache& cache, int64_t n_vocab, int seq, const std::string& path,
                                         const OffloadedRows& off = {});

// The same over streams (in memory: Context::save_sequence_bytes and
// load_sequence_bytes). `size` is the number of bytes `in` holds; `name`
// stands for the source in errors.
void write_sequence_state(KvCache& cache, int64_t n_vocab, int seq, std::ostream& out,
                          std::span<const int32_t> tokens, const OffloadedRows& off = {});
std::vector<int32_t> read_sequence_state(KvCache& cache, int64_t n_vocab, int seq, std::istream& in, uint64_t size,
                                         const std::string& name, const OffloadedRows& off = {});

}  // namespace ferrite::runtime
