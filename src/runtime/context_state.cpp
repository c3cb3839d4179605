#include "runtime/context_state.h"

#include <algorithm>
#include <array>
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

// Bytes of one cell's K and V row in the file.
uint64_t k_bytes(const KvCache& c) { return tensor_row_bytes(c.type_k(), static_cast<uint64_t>(c.n_embd_kv())); }
uint64_t v_bytes(const KvCache& c) { return tensor_row_bytes(c.type_v(), static_cast<uint64_t>(c.n_embd_kv())); }

// File size for a header whose model fields match `c`.
uint64_t expected_size(const Header& h, const KvCache& c) {
  const uint64_t per_layer = uint64_t{h[kNCells]} * (k_bytes(c) + v_bytes(c));
  return kHeaderBytes + uint64_t{h[kNTokens]} * sizeof(int32_t) + uint64_t{h[kNCells]} * sizeof(int32_t) +
         uint64_t{h[kNLayer]} * per_layer;
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

// Name of the in-memory state in error messages.
const std::string kMemoryName = "sequence state";

}  // namespace

void write_sequence_state(KvCache& cache, int64_t n_vocab, int seq, std::ostream& out,
                          std::span<const int32_t> tokens) {
  check_seq(seq);
  std::vector<int64_t> cells;
  for (int64_t i = 0; i < cache.size(); ++i) {
    if (cache.cell(i).pos >= 0 && cache.cell(i).has(seq)) cells.push_back(i);
  }
  const int64_t nk = cache.n_embd_kv(), n_cells = cache.size();
  Header h{kSequenceStateMagic, kSequenceStateVersion, static_cast<uint32_t>(cache.n_layer()),
           static_cast<uint32_t>(nk), static_cast<uint32_t>(nk), static_cast<uint32_t>(cache.type_k()),
           static_cast<uint32_t>(cache.type_v()), static_cast<uint32_t>(n_vocab),
           static_cast<uint32_t>(tokens.size()), static_cast<uint32_t>(cells.size())};

  auto write = [&out](const void* p, size_t n) {
    out.write(static_cast<const char*>(p), static_cast<std::streamsize>(n));
  };
  write(h.data(), sizeof(h));
  write(tokens.data(), tokens.size_bytes());
  for (int64_t c : cells) write(&cache.cell(c).pos, sizeof(int32_t));
  std::vector<uint16_t> v(static_cast<size_t>(nk));  // [n_embd_v] of one cell
  for (int64_t il = 0; il < cache.n_layer(); ++il) {
    for (int64_t c : cells) {
      if (cache.type_k() == TensorType::F16) {
        write(cache.k_row(il, c), static_cast<size_t>(nk) * sizeof(uint16_t));
      } else {
        write(cache.k_quant_row(il, c), static_cast<size_t>(cache.k_row_bytes()));
      }
    }
    for (int64_t c : cells) {
      if (cache.type_v() == TensorType::F16) {
        const uint16_t* vt = cache.vt(il);
        for (int64_t d = 0; d < nk; ++d) v[static_cast<size_t>(d)] = vt[d * n_cells + c];
        write(v.data(), v.size() * sizeof(uint16_t));
      } else {
        write(cache.v_quant_row(il, c), static_cast<size_t>(cache.v_row_bytes()));
      }
    }
  }
}

void save_sequence_state(KvCache& cache, int64_t n_vocab, int seq, const std::string& path,
                         std::span<const int32_t> tokens) {
  check_seq(seq);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw IoError(path, "cannot open for writing");
  write_sequence_state(cache, n_vocab, seq, out, tokens);
  out.flush();
  if (!out) throw IoError(path, "write failed");
}

std::vector<int32_t> load_sequence_state(KvCache& cache, int64_t n_vocab, int seq, const std::string& path) {
  check_seq(seq);
  std::ifstream file(path, std::ios::binary);
  if (!file) throw IoError(path, "cannot open for reading");
  std::error_code ec;
  const uint64_t file_size = std::filesystem::file_size(path, ec);
  if (ec) throw IoError(path, "cannot read size: " + ec.message());
  return read_sequence_state(cache, n_vocab, seq, file, file_size, path);
}

std::vector<int32_t> read_sequence_state(KvCache& cache, int64_t n_vocab, int seq, std::istream& stream,
                                         uint64_t file_size, const std::string& path) {
  check_seq(seq);
  Reader in(stream, path);
  Header h{};
  in.read(h.data(), sizeof(h), "header");
  if (h[kMagic] != kSequenceStateMagic) {
    throw FormatError(path, 0, "magic", "not a ferrite sequence state file");
  }
  if (h[kVersion] != kSequenceStateVersion) {
    throw FormatError(path, 4, "version", "unsupported version " + std::to_string(h[kVersion]));
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
  if (file_size != expected_size(h, cache)) {
    throw FormatError(path, kHeaderBytes, "n_tokens/n_cells",
                      "file has " + std::to_string(file_size) + " bytes, the header implies " +
                          std::to_string(expected_size(h, cache)));
  }
  const int64_t n = h[kNCells];

  std::vector<int32_t> tokens(h[kNTokens]);
  in.read(tokens.data(), tokens.size() * sizeof(int32_t), "tokens");
  for (int32_t t : tokens) {
    if (t < 0 || t >= n_vocab) throw FormatError(path, in.offset(), "tokens", "token id out of range");
  }
  std::vector<int32_t> pos(static_cast<size_t>(n));
  in.read(pos.data(), pos.size() * sizeof(int32_t), "positions");
  std::vector<int32_t> sorted = pos;
  std::sort(sorted.begin(), sorted.end());
  if (!sorted.empty() && sorted.front() < 0) throw FormatError(path, in.offset(), "positions", "negative position");
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    throw FormatError(path, in.offset(), "positions", "repeated position");
  }

  cache.remove(seq, 0, -1);
  if (n > cache.size() - cache.used()) {
    throw InvalidArgument(path + ": the sequence needs " + std::to_string(n) + " cells, the cache has " +
                          std::to_string(cache.size() - cache.used()) + " free");
  }
  const std::vector<int32_t> seqs(static_cast<size_t>(n), seq);
  const std::vector<int32_t> slots = cache.allocate(seqs.data(), pos.data(), n);
  try {
    std::vector<uint16_t> v(static_cast<size_t>(nk));
    const int64_t n_cells = cache.size();
    for (int64_t il = 0; il < cache.n_layer(); ++il) {
      for (int32_t c : slots) {
        if (cache.type_k() == TensorType::F16) {
          in.read(cache.k_row(il, c), nk * sizeof(uint16_t), "K");
        } else {
          in.read(cache.k_quant_row(il, c), static_cast<uint64_t>(cache.k_row_bytes()), "K");
        }
      }
      for (int32_t c : slots) {
        if (cache.type_v() == TensorType::F16) {
          in.read(v.data(), nk * sizeof(uint16_t), "V");
          uint16_t* vt = cache.vt(il);
          for (uint64_t d = 0; d < nk; ++d) vt[d * n_cells + c] = v[d];
        } else {
          in.read(cache.v_quant_row(il, c), static_cast<uint64_t>(cache.v_row_bytes()), "V");
        }
      }
    }
  } catch (...) {
    cache.remove(seq, 0, -1);
    throw;
  }
  return tokens;
}

// Context's entry points (context.h).

void Context::save_sequence(int seq, const std::string& path, std::span<const int32_t> tokens) {
  if (gpu_) throw InvalidArgument("saving a sequence is not supported with GPU offload");
  save_sequence_state(cache_, n_vocab(), seq, path, tokens);
}

std::vector<int32_t> Context::load_sequence(int seq, const std::string& path) {
  if (gpu_) throw InvalidArgument("loading a sequence is not supported with GPU offload");
  return load_sequence_state(cache_, n_vocab(), seq, path);
}

std::string Context::save_sequence_bytes(int seq, std::span<const int32_t> tokens) {
  if (gpu_) throw InvalidArgument("saving a sequence is not supported with GPU offload");
  std::ostringstream out(std::ios::binary);
  write_sequence_state(cache_, n_vocab(), seq, out, tokens);
  return std::move(out).str();
}

std::vector<int32_t> Context::load_sequence_bytes(int seq, std::string_view bytes) {
  if (gpu_) throw InvalidArgument("loading a sequence is not supported with GPU offload");
  ViewBuffer buffer(bytes);
  std::istream in(&buffer);
  return read_sequence_state(cache_, n_vocab(), seq, in, bytes.size(), kMemoryName);
}

}  // namespace ferrite::runtime
