#include "runtime/context_state.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <streambuf>
#include <string_view>

#include "core/error.h"
#include "runtime/context.h"

namespace ferrite::runtime {
namespace {

enum HeaderField : size_t {
  kMagic, kVersion, kNLayer, kNEmbdK, kNEmbdV, kTypeK, kTypeV, kNVocab, kNTokens, kNCells, kHeaderFields
};
constexpr const char* kFieldNames[kHeaderFields] = {"magic",  "version", "n_layer", "n_embd_k", "n_embd_v",
                                                    "type_k", "type_v",  "n_vocab", "n_tokens", "n_cells"};
using Header = std::array<uint32_t, kHeaderFields>;
constexpr uint64_t kHeaderBytes = sizeof(Header);

void check_seq(int seq) {
  if (seq < 0 || seq >= kMaxSequences) {
    throw InvalidArgument("sequence id " + std::to_string(seq) + " out of range 0.." +
                          std::to_string(kMaxSequences - 1));
  }
}

// The cells of `seq`, in cache order.
std::vector<int32_t> seq_cells(const KvCache& c, int seq) {
  std::vector<int32_t> cells;
  for (int64_t i = 0; i < c.size(); ++i) {
    if (c.cell(i).pos >= 0 && c.cell(i).has(seq)) cells.push_back(static_cast<int32_t>(i));
  }
  return cells;
}

// Bytes of one cell's K and V row in the file.
uint64_t k_bytes(const KvCache& c) { return tensor_row_bytes(c.type_k(), static_cast<uint64_t>(c.n_embd_kv())); }
uint64_t v_bytes(const KvCache& c) { return tensor_row_bytes(c.type_v(), static_cast<uint64_t>(c.n_embd_kv())); }

// A layer whose file rows are its recurrent state (version 3) instead of K/V.
bool is_state_layer(const KvCache& c, int64_t il) { return c.recurrent() != nullptr && c.recurrent()->has_layer(il); }

// File size for a header whose model fields match `c` (and nw window cells:
// a window file, whose sliding layers hold those).
uint64_t expected_size(const Header& h, uint32_t nw, const KvCache& c) {
  const bool windowed = h[kVersion] == kSequenceStateWindowVersion;
  uint64_t size = kHeaderBytes + (windowed ? sizeof(uint32_t) : 0) + uint64_t{h[kNTokens]} * sizeof(int32_t) +
                  (uint64_t{h[kNCells]} + nw) * sizeof(int32_t);
  for (int64_t il = 0; il < c.n_layer(); ++il) {
    if (is_state_layer(c, il)) {
      size += static_cast<uint64_t>(c.recurrent()->conv_floats() + c.recurrent()->ssm_floats()) * sizeof(float);
      continue;
    }
    const bool in_window = windowed && c.window() != nullptr && c.window()->keeps(il);
    size += uint64_t{in_window ? nw : h[kNCells]} * (k_bytes(c) + v_bytes(c));
  }
  return size;
}

class Reader {
 public:
  Reader(std::istream& in, const std::string& path) : path_(path), in_(in) {}
  void read(void* dst, uint64_t n, const char* field) {
    in_.read(static_cast<char*>(dst), static_cast<std::streamsize>(n));
    if (static_cast<uint64_t>(in_.gcount()) != n) throw FormatError(path_, offset_, field, "file is truncated");
    offset_ += n;
  }
  uint64_t offset() const { return offset_; }

 private:
  std::string path_;
  std::istream& in_;
  uint64_t offset_ = 0;
};

// Reads in place from memory the caller keeps alive (load_sequence_bytes).
class ViewBuffer : public std::streambuf {
 public:
  explicit ViewBuffer(std::string_view bytes) {
    char* p = const_cast<char*>(bytes.data());  // the get area is only read
    setg(p, p, p + bytes.size());
  }
};

// n positions, checked: none negative, none repeated.
std::vector<int32_t> read_positions(Reader& in, int64_t n, const std::string& path) {
  std::vector<int32_t> pos(static_cast<size_t>(n));
  in.read(pos.data(), pos.size() * sizeof(int32_t), "positions");
  std::vector<int32_t> sorted = pos;
  std::sort(sorted.begin(), sorted.end());
  if (!sorted.empty() && sorted.front() < 0) throw FormatError(path, in.offset(), "positions", "negative position");
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    throw FormatError(path, in.offset(), "positions", "repeated position");
  }
  return pos;
}

// Layers whose rows another backend keeps need `off` (checked before
// anything is written or read).
void check_offloaded(const KvCache& cache, bool reading, const OffloadedRows& off) {
  const KvCache* win = cache.window();
  for (int64_t il = 0; il < cache.n_layer(); ++il) {
    if (is_state_layer(cache, il)) continue;
    const KvCache& c = win != nullptr && win->keeps(il) ? *win : cache;
    if (!c.stores(il) && !(reading ? static_cast<bool>(off.write) : static_cast<bool>(off.read))) {
      throw InvalidArgument("layer " + std::to_string(il) + " keeps its K/V on another backend, which " +
                            (reading ? "restoring" : "saving") + " a sequence has no way to reach");
    }
  }
}

// One layer's K rows then V rows of the file's cells, kept by another
// backend: read there, written as they are.
void write_offloaded_rows(const std::function<void(const void*, size_t)>& write, const KvCache& c, int64_t il,
                          const std::vector<int32_t>& cells, const OffloadedRows& off) {
  const uint64_t kb = k_bytes(c), vb = v_bytes(c);
  std::vector<uint8_t> k(cells.size() * kb), v(cells.size() * vb);
  if (!cells.empty()) off.read(il, cells, k.data(), v.data());
  write(k.data(), k.size());
  write(v.data(), v.size());
}

// The same into another backend's cells at dest (-1: read and left out).
void read_offloaded_rows(Reader& in, const KvCache& c, int64_t il, const std::vector<int32_t>& dest,
                         const OffloadedRows& off) {
  const uint64_t kb = k_bytes(c), vb = v_bytes(c);
  std::vector<uint8_t> k(dest.size() * kb), v(dest.size() * vb);
  in.read(k.data(), k.size(), "K");
  in.read(v.data(), v.size(), "V");
  // The rows that go somewhere, packed.
  std::vector<int32_t> cells;
  size_t n = 0;
  for (size_t i = 0; i < dest.size(); ++i) {
    if (dest[i] < 0) continue;
    std::memmove(k.data() + n * kb, k.data() + i * kb, kb);
    std::memmove(v.data() + n * vb, v.data() + i * vb, vb);
    cells.push_back(dest[i]);
    ++n;
  }
  if (!cells.empty()) off.write(il, cells, k.data(), v.data());
}

// One layer's K rows then V rows of the file's cells into `c` at dest
// (-1: read and left out).
void read_rows(Reader& in, KvCache& c, int64_t il, const std::vector<int32_t>& dest, const OffloadedRows& off) {
  if (!c.stores(il)) {
    read_offloaded_rows(in, c, il, dest, off);
    return;
  }
  const auto nk = static_cast<uint64_t>(c.n_embd_kv());
  const uint64_t kb = c.type_k() == TensorType::F16 ? nk * sizeof(uint16_t) : static_cast<uint64_t>(c.k_row_bytes());
  const uint64_t vb = c.type_v() == TensorType::F16 ? nk * sizeof(uint16_t) : static_cast<uint64_t>(c.v_row_bytes());
  std::vector<uint8_t> skip(std::max(kb, vb));
  for (int32_t d : dest) {
    if (d < 0) {
      in.read(skip.data(), kb, "K");
    } else if (c.type_k() == TensorType::F16) {
      in.read(c.k_row(il, d), kb, "K");
    } else {
      in.read(c.k_quant_row(il, d), kb, "K");
    }
  }
  std::vector<uint16_t> v(static_cast<size_t>(nk));
  for (int32_t d : dest) {
    if (d < 0) {
      in.read(skip.data(), vb, "V");
    } else if (c.type_v() == TensorType::F16) {
      in.read(v.data(), vb, "V");
      uint16_t* vt = c.vt(il);
      for (uint64_t e = 0; e < nk; ++e) vt[e * static_cast<uint64_t>(c.size()) + static_cast<uint64_t>(d)] = v[e];
    } else {
      in.read(c.v_quant_row(il, d), vb, "V");
    }
  }
}

// Name of the in-memory state in error messages.
const std::string kMemoryName = "sequence state";

}  // namespace

void write_sequence_state(KvCache& cache, int64_t n_vocab, int seq, std::ostream& out,
                          std::span<const int32_t> tokens, const OffloadedRows& off) {
  check_seq(seq);
  check_offloaded(cache, false, off);
  KvCache* win = cache.window();
  const std::vector<int32_t> cells = seq_cells(cache, seq);
  const std::vector<int32_t> wcells = win != nullptr ? seq_cells(*win, seq) : std::vector<int32_t>{};
  const int64_t nk = cache.n_embd_kv();
  RecurrentState* rs = cache.recurrent();
  const uint32_t version = rs != nullptr    ? kSequenceStateRecurrentVersion
                           : win != nullptr ? kSequenceStateWindowVersion
                                            : kSequenceStateVersion;
  Header h{kSequenceStateMagic, version,
           static_cast<uint32_t>(cache.n_layer()), static_cast<uint32_t>(nk), static_cast<uint32_t>(nk),
           static_cast<uint32_t>(cache.type_k()), static_cast<uint32_t>(cache.type_v()),
           static_cast<uint32_t>(n_vocab), static_cast<uint32_t>(tokens.size()), static_cast<uint32_t>(cells.size())};

  const std::function<void(const void*, size_t)> write = [&out](const void* p, size_t n) {
    out.write(static_cast<const char*>(p), static_cast<std::streamsize>(n));
  };
  write(h.data(), sizeof(h));
  if (win != nullptr) {
    const auto nw = static_cast<uint32_t>(wcells.size());
    write(&nw, sizeof(nw));
  }
  write(tokens.data(), tokens.size_bytes());
  for (int32_t c : cells) write(&cache.cell(c).pos, sizeof(int32_t));
  for (int32_t c : wcells) write(&win->cell(c).pos, sizeof(int32_t));
  std::vector<uint16_t> v(static_cast<size_t>(nk));  // [n_embd_v] of one cell
  for (int64_t il = 0; il < cache.n_layer(); ++il) {
    if (is_state_layer(cache, il)) {
      const int slot = rs->slot_of(seq);
      std::vector<float> zeros;
      if (slot < 0) zeros.assign(static_cast<size_t>(std::max(rs->conv_floats(), rs->ssm_floats())), 0.0f);
      write(slot < 0 ? zeros.data() : rs->conv_row(il, slot), static_cast<size_t>(rs->conv_floats()) * sizeof(float));
      write(slot < 0 ? zeros.data() : rs->ssm_row(il, slot), static_cast<size_t>(rs->ssm_floats()) * sizeof(float));
      continue;
    }
    const bool in_window = win != nullptr && win->keeps(il);
    KvCache& c = in_window ? *win : cache;
    const std::vector<int32_t>& list = in_window ? wcells : cells;
    if (!c.stores(il)) {
      write_offloaded_rows(write, c, il, list, off);
      continue;
    }
    for (int32_t cell : list) {
      if (c.type_k() == TensorType::F16) {
        write(c.k_row(il, cell), static_cast<size_t>(nk) * sizeof(uint16_t));
      } else {
        write(c.k_quant_row(il, cell), static_cast<size_t>(c.k_row_bytes()));
      }
    }
    for (int32_t cell : list) {
      if (c.type_v() == TensorType::F16) {
        const uint16_t* vt = c.vt(il);
        for (int64_t d = 0; d < nk; ++d) v[static_cast<size_t>(d)] = vt[d * c.size() + cell];
        write(v.data(), v.size() * sizeof(uint16_t));
      } else {
        write(c.v_quant_row(il, cell), static_cast<size_t>(c.v_row_bytes()));
      }
    }
  }
}

void save_sequence_state(KvCache& cache, int64_t n_vocab, int seq, const std::string& path,
                         std::span<const int32_t> tokens, const OffloadedRows& off) {
  check_seq(seq);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw IoError(path, "cannot open for writing");
  write_sequence_state(cache, n_vocab, seq, out, tokens, off);
  out.flush();
  if (!out) throw IoError(path, "write failed");
}

std::vector<int32_t> load_sequence_state(KvCache& cache, int64_t n_vocab, int seq, const std::string& path,
                                         const OffloadedRows& off) {
  check_seq(seq);
  std::ifstream file(path, std::ios::binary);
  if (!file) throw IoError(path, "cannot open for reading");
  std::error_code ec;
  const uint64_t file_size = std::filesystem::file_size(path, ec);
  if (ec) throw IoError(path, "cannot read size: " + ec.message());
  return read_sequence_state(cache, n_vocab, seq, file, file_size, path, off);
}

std::vector<int32_t> read_sequence_state(KvCache& cache, int64_t n_vocab, int seq, std::istream& stream,
                                         uint64_t file_size, const std::string& path, const OffloadedRows& off) {
  check_seq(seq);
  check_offloaded(cache, true, off);
  Reader in(stream, path);
  Header h{};
  in.read(h.data(), sizeof(h), "header");
  if (h[kMagic] != kSequenceStateMagic) {
    throw FormatError(path, 0, "magic", "not a ferrite sequence state file");
  }
  if (h[kVersion] != kSequenceStateVersion && h[kVersion] != kSequenceStateWindowVersion &&
      h[kVersion] != kSequenceStateRecurrentVersion) {
    throw FormatError(path, 4, "version", "unsupported version " + std::to_string(h[kVersion]));
  }
  if ((h[kVersion] == kSequenceStateRecurrentVersion) != (cache.recurrent() != nullptr)) {
    throw InvalidArgument(path + (cache.recurrent() != nullptr
                                      ? std::string(": saved without a recurrent state, which this model's SSM layers need")
                                      : std::string(": saved with a recurrent state this model has no layers for")));
  }
  const auto nk = static_cast<uint64_t>(cache.n_embd_kv());
  const Header want{kSequenceStateMagic, kSequenceStateVersion, static_cast<uint32_t>(cache.n_layer()),
                    static_cast<uint32_t>(nk), static_cast<uint32_t>(nk), static_cast<uint32_t>(cache.type_k()),
                    static_cast<uint32_t>(cache.type_v()),
                    static_cast<uint32_t>(n_vocab), 0, 0};
  for (size_t f = kNLayer; f <= kNVocab; ++f) {
    if (h[f] != want[f]) {
      throw InvalidArgument(path + ": saved for another model or cache: " + kFieldNames[f] + " is " +
                            std::to_string(h[f]) + ", this context has " + std::to_string(want[f]));
    }
  }
  KvCache* win = cache.window();
  const bool windowed = h[kVersion] == kSequenceStateWindowVersion;
  if (windowed && win == nullptr) {
    throw InvalidArgument(path + ": saved from a window KV cache, which keeps only the window (or chunk) of the "
                                 "sliding (or chunked) layers; this context keeps the whole cache (--swa-full) and "
                                 "needs them all");
  }
  uint32_t nw = 0;
  if (windowed) in.read(&nw, sizeof(nw), "window cells");
  if (file_size != expected_size(h, nw, cache)) {
    throw FormatError(path, kHeaderBytes, "n_tokens/n_cells",
                      "file has " + std::to_string(file_size) + " bytes, the header implies " +
                          std::to_string(expected_size(h, nw, cache)));
  }
  const int64_t n = h[kNCells];

  std::vector<int32_t> tokens(h[kNTokens]);
  in.read(tokens.data(), tokens.size() * sizeof(int32_t), "tokens");
  for (int32_t t : tokens) {
    if (t < 0 || t >= n_vocab) throw FormatError(path, in.offset(), "tokens", "token id out of range");
  }
  const std::vector<int32_t> pos = read_positions(in, n, path);
  std::vector<int32_t> wpos = read_positions(in, nw, path);
  std::vector<int32_t> sorted_pos = pos;
  std::sort(sorted_pos.begin(), sorted_pos.end());
  auto holds = [](const std::vector<int32_t>& sorted, int32_t p) { return std::binary_search(sorted.begin(), sorted.end(), p); };
  if (!std::all_of(wpos.begin(), wpos.end(), [&](int32_t p) { return holds(sorted_pos, p); })) {
    throw FormatError(path, in.offset(), "window positions", "a window position the sequence lacks");
  }
  // A whole cache's state into a window: the window takes the positions the
  // next token sees.
  std::vector<int32_t> file_to_window;  // whole-cache file: window slot of each file cell, or -1
  if (!windowed && win != nullptr && n > 0) {
    const int32_t last = *std::max_element(pos.begin(), pos.end());
    for (int32_t p : pos) {
      if (win->reach().sees(static_cast<int64_t>(last) + 1, p)) wpos.push_back(p);
    }
  }

  cache.remove(seq, 0, -1);
  if (n > cache.size() - cache.used() ||
      (win != nullptr && static_cast<int64_t>(wpos.size()) > win->size() - win->used())) {
    throw InvalidArgument(path + ": the sequence needs " + std::to_string(n) + " cells, the cache has " +
                          std::to_string(cache.size() - cache.used()) + " free");
  }
  const std::vector<int32_t> seqs(static_cast<size_t>(std::max<int64_t>(n, 1)), seq);
  const std::vector<int32_t> slots = cache.allocate_cells(seqs.data(), pos.data(), n);
  try {
    std::vector<int32_t> wslots;
    if (win != nullptr) {
      wslots = win->allocate_cells(seqs.data(), wpos.data(), static_cast<int64_t>(wpos.size()));
      // What the main cells hold and the window not counts as dropped.
      std::vector<int32_t> sorted_wpos = wpos;
      std::sort(sorted_wpos.begin(), sorted_wpos.end());
      int32_t dropped = -1;
      for (int32_t p : pos) {
        if (!holds(sorted_wpos, p)) dropped = std::max(dropped, p);
      }
      win->set_dropped(seq, dropped);
      if (!windowed) {
        // wpos lists the window's positions in file order: walk both.
        file_to_window.assign(static_cast<size_t>(n), -1);
        size_t w = 0;
        for (size_t i = 0; i < pos.size() && w < wpos.size(); ++i) {
          if (pos[i] == wpos[w]) file_to_window[i] = wslots[w++];
        }
      }
    }
    int state_slot = -1;
    if (cache.recurrent() != nullptr) state_slot = cache.recurrent()->assign(seqs.data(), 1).at(0);
    for (int64_t il = 0; il < cache.n_layer(); ++il) {
      const bool in_window = win != nullptr && win->keeps(il);
      if (is_state_layer(cache, il)) {
        RecurrentState& rs = *cache.recurrent();
        in.read(rs.conv_row(il, state_slot), static_cast<uint64_t>(rs.conv_floats()) * sizeof(float), "conv state");
        in.read(rs.ssm_row(il, state_slot), static_cast<uint64_t>(rs.ssm_floats()) * sizeof(float), "ssm state");
      } else if (!in_window) {
        read_rows(in, cache, il, slots, off);
      } else {
        read_rows(in, *win, il, windowed ? wslots : file_to_window, off);
      }
    }
    // Each position at the cell offset an evaluation from a region start
    // gives it: the same summation lanes, the same logits bit for bit.
    cache.align_sequence(seq);
    if (win != nullptr) win->align_sequence(seq);
  } catch (...) {
    cache.remove(seq, 0, -1);
    throw;
  }
  return tokens;
}

// Context's entry points (context.h): the GPU's layers through its backend.

OffloadedRows Context::offloaded_rows() {
  if (!gpu_) return {};
  return {[this](int64_t layer, std::span<const int32_t> cells, uint8_t* k, uint8_t* v) {
            gpu_->read_cached_rows(layer, cells, k, v);
          },
          [this](int64_t layer, std::span<const int32_t> cells, const uint8_t* k, const uint8_t* v) {
            gpu_->write_cached_rows(layer, cells, k, v);
          }};
}

void Context::save_sequence(int seq, const std::string& path, std::span<const int32_t> tokens) {
  save_sequence_state(cache_, n_vocab(), seq, path, tokens, offloaded_rows());
}

std::vector<int32_t> Context::load_sequence(int seq, const std::string& path) {
  return load_sequence_state(cache_, n_vocab(), seq, path, offloaded_rows());
}

std::string Context::save_sequence_bytes(int seq, std::span<const int32_t> tokens) {
  std::ostringstream out(std::ios::binary);
  write_sequence_state(cache_, n_vocab(), seq, out, tokens, offloaded_rows());
  return std::move(out).str();
}

std::vector<int32_t> Context::load_sequence_bytes(int seq, std::string_view bytes) {
  ViewBuffer buffer(bytes);
  std::istream in(&buffer);
  return read_sequence_state(cache_, n_vocab(), seq, in, bytes.size(), kMemoryName, offloaded_rows());
}

}  // namespace ferrite::runtime
