// libFuzzer target for the tokenizers: arbitrary bytes go through encode
// (with and without special-token parsing), decode and the streaming decoder
// of every vocabulary named in $FERRITE_FUZZ_VOCABS (colon-separated GGUF
// paths; default: the llama-spm, llama-bpe, qwen2, gpt-2, bert-bge and phi-3
// vocabularies of ../shared/vocab, or $FERRITE_SHARED/vocab). Never a crash; for valid UTF-8 input the
// lossless tokenizers (SPM with byte fallback, byte-level BPE) must give the
// input back, unless it holds U+2581 (SPM reads it as a space) or text equal
// to a special token.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace {

struct Loaded {
  std::string name;
  std::unique_ptr<ferrite::tokenizer::Tokenizer> tok;
};

std::vector<Loaded>& tokenizers() {
  static std::vector<Loaded> all = [] {
    std::vector<Loaded> out;
    std::string list;
    if (const char* env = std::getenv("FERRITE_FUZZ_VOCABS")) {
      list = env;
    } else {
      const char* shared = std::getenv("FERRITE_SHARED");  // as the tests: ../shared unless set
      const std::string dir = shared != nullptr ? shared : "../shared";
      for (const char* n : {"llama-spm", "llama-bpe", "qwen2", "gpt-2", "bert-bge", "phi-3"}) {
        if (!list.empty()) list += ':';
        list += dir + "/vocab/ggml-vocab-" + n + ".gguf";
      }
    }
    size_t start = 0;
    while (start <= list.size()) {
      size_t end = list.find(':', start);
      if (end == std::string::npos) end = list.size();
      const std::string path = list.substr(start, end - start);
      if (!path.empty()) {
        out.push_back(Loaded{path, std::make_unique<ferrite::tokenizer::Tokenizer>(
                                       ferrite::tokenizer::Tokenizer::from_file(path))});
      }
      start = end + 1;
    }
    return out;
  }();
  return all;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const bool valid = ferrite::tokenizer::is_valid_utf8(text);
  for (const auto& [name, tok] : tokenizers()) {
    for (bool parse_special : {false, true}) {
      const auto ids = tok->encode(text, true, parse_special);
      ferrite::tokenizer::StreamDecoder dec(*tok, true);
      std::string streamed;
      for (int32_t id : ids) {
        const std::string chunk = dec.push(id);
        if (!ferrite::tokenizer::is_valid_utf8(chunk)) std::abort();
        streamed += chunk;
      }
      streamed += dec.flush();
    }
    const auto kind = tok->vocab().kind;
    const bool lossless_kind =
        (kind == ferrite::tokenizer::ModelKind::BPE) ||
        (kind == ferrite::tokenizer::ModelKind::SPM && name.find("phi-3") == std::string::npos);
    if (valid && lossless_kind && text.find("\xE2\x96\x81") == std::string::npos) {
      bool has_special_text = false;
      for (int32_t id : tok->vocab().special_tokens) {
        if (text.find(tok->vocab().text[static_cast<size_t>(id)]) != std::string::npos) has_special_text = true;
      }
      if (!has_special_text && tok->decode(tok->encode(text, false, false)) != text) std::abort();
    }
  }
  return 0;
}
