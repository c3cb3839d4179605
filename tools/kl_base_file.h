// The base-logits file of `ferrite perplexity --kl-divergence-base FILE`:
// the base model's log-probabilities of every scored position, for a later
// `--kl-divergence` run of another model (a quantization of it) to compare
// its distributions with. Written and read as a stream, a row at a time.
//
// Layout (little-endian):
//   char[8]  magic "FRKLBASE"
//   u32      version (1)
//   u32      bytes per value (4: float32 log-probabilities)
//   u64      n_vocab
//   u64      n_ctx          tokens per chunk
//   u64      n_chunks
//   u64      n_tokens       of the tokenized text
//   i32      tokens[n_tokens]
//   f32      log_probs[n_chunks * rows_per_chunk(n_ctx)][n_vocab]
// where the scored rows of a chunk are positions n_ctx/2 .. n_ctx-2.
// The reader checks the header, the tokens and the exact file size before
// reading any row (FormatError, naming the file).
#pragma once

#include <cstdint>
#include <fstream>
#include <span>
#include <string>
#include <vector>

namespace ferrite::tools {

// Scored positions of a chunk of n_ctx tokens (llama-perplexity's second half).
inline int64_t kl_rows_per_chunk(int64_t n_ctx) { return n_ctx - 1 - n_ctx / 2; }

struct KlBaseHeader {
  uint64_t n_vocab = 0;
  uint64_t n_ctx = 0;
  uint64_t n_chunks = 0;
  std::vector<int32_t> tokens;
};

class KlBaseWriter {
 public:
  // Creates `path` and writes the header. Throws IoError.
  KlBaseWriter(const std::string& path, const KlBaseHeader& header);
  // Appends one scored position's log-probabilities [n_vocab].
  void write_row(std::span<const float> log_probs);
  // Flushes; throws IoError when the rows written are not n_chunks' worth.
  void finish();

 private:
  std::string path_;
  std::ofstream out_;
  uint64_t n_vocab_ = 0;
  uint64_t rows_left_ = 0;
};

class KlBaseReader {
 public:
  // Opens and validates `path` (IoError / FormatError).
  explicit KlBaseReader(const std::string& path);
  const KlBaseHeader& header() const { return header_; }
  // Reads the next row into `log_probs` [n_vocab]; throws FormatError past
  // the end or on a short read.
  void read_row(std::span<float> log_probs);

 private:
  std::string path_;
  std::ifstream in_;
  KlBaseHeader header_;
  uint64_t rows_left_ = 0;
};

}  // namespace ferrite::tools
