// Tokenizer throughput: MB/s of encode (no BOS, special tokens not parsed)
// and of decode on a text file, for each vocabulary given.
//
//   tokenizer_bench [--text FILE] [--repeat N] VOCAB.gguf...
//
// Defaults: ../shared/text/war-and-peace.txt and the llama-spm, llama-bpe,
// qwen2, gpt-2 and bert-bge vocabularies of ../shared/vocab. Reports the best
// of N runs (default 3).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::string text_path = "../shared/text/war-and-peace.txt";
  int repeat = 3;
  std::vector<std::string> vocabs;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--text") && i + 1 < argc) {
      text_path = argv[++i];
    } else if (!std::strcmp(argv[i], "--repeat") && i + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else {
      vocabs.emplace_back(argv[i]);
    }
  }
  if (vocabs.empty()) {
    for (const char* n : {"llama-spm", "llama-bpe", "qwen2", "gpt-2", "bert-bge"}) {
      vocabs.push_back(std::string("../shared/vocab/ggml-vocab-") + n + ".gguf");
    }
  }
  try {
    const std::string text = read_all(text_path);
    const double mb = static_cast<double>(text.size()) / 1e6;
    std::printf("text: %s (%.2f MB), best of %d\n", text_path.c_str(), mb, repeat);
    std::printf("%-40s %10s %12s %12s %10s\n", "vocab", "tokens", "encode MB/s", "decode MB/s", "load s");
    for (const auto& path : vocabs) {
      auto t0 = std::chrono::steady_clock::now();
      const auto tok = ferrite::tokenizer::Tokenizer::from_file(path);
      const double load = seconds_since(t0);
      double best_enc = 1e30, best_dec = 1e30;
      std::vector<int32_t> ids;
      for (int r = 0; r < repeat; ++r) {
        t0 = std::chrono::steady_clock::now();
        ids = tok.encode(text, false, false);
        best_enc = std::min(best_enc, seconds_since(t0));
        t0 = std::chrono::steady_clock::now();
        const std::string back = tok.decode(ids);
        best_dec = std::min(best_dec, seconds_since(t0));
        if (back.empty() && !text.empty()) std::printf("(empty decode)\n");
      }
      const std::string name = path.substr(path.find_last_of('/') + 1);
      std::printf("%-40s %10zu %12.2f %12.2f %10.3f\n", name.c_str(), ids.size(), mb / best_enc, mb / best_dec, load);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
