#include "kl_base_file.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "core/error.h"

namespace ferrite::tools {
namespace {

constexpr char kMagic[8] = {'F', 'R', 'K', 'L', 'B', 'A', 'S', 'E'};
constexpr uint32_t kVersion = 1;
constexpr uint32_t kValueBytes = sizeof(float);
constexpr uint64_t kFixedHeaderBytes = sizeof kMagic + 2 * sizeof(uint32_t) + 4 * sizeof(uint64_t);
// Sanity bounds: far above any real vocabulary or context.
constexpr uint64_t kMaxVocab = uint64_t{1} << 24;
constexpr uint64_t kMaxCtx = uint64_t{1} << 24;
constexpr float kMaxLogProb = 1e-3f;

template <typename T>
void put(std::ofstream& out, T v) {
  out.write(reinterpret_cast<const char*>(&v), sizeof v);
}

// a * b + c, or false on overflow.
bool mul_add(uint64_t a, uint64_t b, uint64_t c, uint64_t& out) {
  if (b != 0 && a > (std::numeric_limits<uint64_t>::max() - c) / b) return false;
  out = a * b + c;
  return true;
}

}  // namespace

KlBaseWriter::KlBaseWriter(const std::string& path, const KlBaseHeader& h) : path_(path), n_vocab_(h.n_vocab) {
  out_.open(path, std::ios::binary | std::ios::trunc);
  if (!out_) throw IoError(path, "cannot create the KL-divergence base file");
  out_.write(kMagic, sizeof kMagic);
  put(out_, kVersion);
  put(out_, kValueBytes);
  put(out_, h.n_vocab);
  put(out_, h.n_ctx);
  put(out_, h.n_chunks);
  put(out_, static_cast<uint64_t>(h.tokens.size()));
  out_.write(reinterpret_cast<const char*>(h.tokens.data()),
             static_cast<std::streamsize>(h.tokens.size() * sizeof(int32_t)));
  rows_left_ = h.n_chunks * static_cast<uint64_t>(kl_rows_per_chunk(static_cast<int64_t>(h.n_ctx)));
  if (!out_) throw IoError(path, "write failed");
}

void KlBaseWriter::write_row(std::span<const float> log_probs) {
  if (log_probs.size() != n_vocab_ || rows_left_ == 0) throw IoError(path_, "unexpected row (internal error)");
  out_.write(reinterpret_cast<const char*>(log_probs.data()),
             static_cast<std::streamsize>(log_probs.size() * sizeof(float)));
  if (!out_) throw IoError(path_, "write failed (disk full?)");
  --rows_left_;
}

void KlBaseWriter::finish() {
  out_.flush();
  if (!out_) throw IoError(path_, "write failed (disk full?)");
  if (rows_left_ != 0) throw IoError(path_, "incomplete: " + std::to_string(rows_left_) + " rows missing");
  out_.close();
}

KlBaseReader::KlBaseReader(const std::string& path) : path_(path) {
  std::error_code ec;
  const uint64_t file_size = std::filesystem::file_size(path, ec);
  if (ec) throw IoError(path, "cannot open the KL-divergence base file: " + ec.message());
  in_.open(path, std::ios::binary);
  if (!in_) throw IoError(path, "cannot open the KL-divergence base file");
  if (file_size < kFixedHeaderBytes) {
    throw FormatError(path, 0, "header", "the file is too short to be a KL-divergence base file");
  }
  char magic[sizeof kMagic];
  uint32_t version = 0, value_bytes = 0;
  uint64_t n_tokens = 0;
  in_.read(magic, sizeof magic);
  auto get = [&](auto& v) { in_.read(reinterpret_cast<char*>(&v), sizeof v); };
  get(version);
  get(value_bytes);
  get(header_.n_vocab);
  get(header_.n_ctx);
  get(header_.n_chunks);
  get(n_tokens);
  if (!in_) throw FormatError(path, 0, "header", "short read");
  if (std::memcmp(magic, kMagic, sizeof kMagic) != 0) {
    throw FormatError(path, 0, "magic", "not a KL-divergence base file (written by ferrite perplexity "
                                        "--kl-divergence-base)");
  }
  if (version != kVersion) throw FormatError(path, 8, "version", "unsupported version " + std::to_string(version));
  if (value_bytes != kValueBytes) throw FormatError(path, 12, "value size", std::to_string(value_bytes));
  if (header_.n_vocab == 0 || header_.n_vocab > kMaxVocab) {
    throw FormatError(path, 16, "n_vocab", "implausible value " + std::to_string(header_.n_vocab));
  }
  if (header_.n_ctx < 4 || header_.n_ctx > kMaxCtx) {
    throw FormatError(path, 24, "n_ctx", "implausible value " + std::to_string(header_.n_ctx));
  }
  // Every size from the header, checked against the real file size before
  // anything of that size is allocated or read.
  uint64_t tokens_end = 0, n_rows = 0, expected = 0;
  const uint64_t rows_per_chunk = static_cast<uint64_t>(kl_rows_per_chunk(static_cast<int64_t>(header_.n_ctx)));
  const bool sizes_ok = mul_add(n_tokens, sizeof(int32_t), kFixedHeaderBytes, tokens_end) &&
                        mul_add(header_.n_chunks, rows_per_chunk, 0, n_rows) &&
                        mul_add(n_rows, header_.n_vocab * kValueBytes, tokens_end, expected);
  if (!sizes_ok || header_.n_chunks == 0 || header_.n_chunks > n_tokens / header_.n_ctx) {
    throw FormatError(path, 32, "n_chunks", std::to_string(header_.n_chunks) + " chunks of " +
                                                std::to_string(header_.n_ctx) + " do not fit " +
                                                std::to_string(n_tokens) + " tokens");
  }
  if (expected != file_size) {
    throw FormatError(path, file_size, "size",
                      "the file has " + std::to_string(file_size) + " bytes, its header describes " +
                          std::to_string(expected) + (file_size < expected ? " (truncated?)" : ""));
  }
  header_.tokens.resize(n_tokens);
  in_.read(reinterpret_cast<char*>(header_.tokens.data()), static_cast<std::streamsize>(n_tokens * sizeof(int32_t)));
  if (!in_) throw FormatError(path, kFixedHeaderBytes, "tokens", "short read");
  for (size_t i = 0; i < header_.tokens.size(); ++i) {
    if (header_.tokens[i] < 0 || static_cast<uint64_t>(header_.tokens[i]) >= header_.n_vocab) {
      throw FormatError(path, kFixedHeaderBytes + i * sizeof(int32_t), "tokens",
                        "token id " + std::to_string(header_.tokens[i]) + " outside the vocabulary");
    }
  }
  rows_left_ = n_rows;
}

void KlBaseReader::read_row(std::span<float> log_probs) {
  const auto offset = static_cast<uint64_t>(in_.tellg());
  if (rows_left_ == 0) throw FormatError(path_, offset, "log-probabilities", "more rows asked than stored");
  if (log_probs.size() != header_.n_vocab) throw InvalidArgument("KL base row of the wrong width (internal error)");
  in_.read(reinterpret_cast<char*>(log_probs.data()), static_cast<std::streamsize>(log_probs.size() * sizeof(float)));
  if (!in_) throw FormatError(path_, offset, "log-probabilities", "short read (file changed while reading?)");
  for (float v : log_probs) {
    // A log-probability is at most 0 (a little above from rounding) or -inf.
    if (std::isnan(v) || v > kMaxLogProb) {
      throw FormatError(path_, offset, "log-probabilities", "corrupt row (value " + std::to_string(v) + ")");
    }
  }
  --rows_left_;
}

}  // namespace ferrite::tools
