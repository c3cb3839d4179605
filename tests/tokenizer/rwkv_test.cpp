// The RWKV world tokenizer (tokenizer/rwkv.cpp) on a handmade vocabulary in
// the converter's escaped form (the 256 single bytes as Python prints them,
// "<s>" as control token 0, and multi-byte tokens that overlap: prefixes,
// a UTF-8 character and part of it, "\n\n", a quote, a backslash, an
// upper-case hex escape read as llama.cpp reads it). The expected ids are
// llama.cpp c392e50's for the same file (llama_tokenize, no special tokens
// added or parsed).
// Regenerating them (llama.cpp built outside the repository):
//   build/tests/test_tokenizer --gtest_also_run_disabled_tests --gtest_filter='RwkvTokenizer.DISABLED_Write'
//       with FERRITE_TINY_OUT=DIR: DIR/rwkv-vocab.gguf and DIR/rwkv-vocab.inp (the texts, separated by
//       "\n__ggml_vocab_test__\n"); then tokenize each text with llama.cpp.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/writer.h"
#include "tokenizer/tokenizer.h"

namespace ferrite::test::rwkv_tok {
namespace {

// A byte as Python's repr of bytes writes it (between single quotes).
std::string escape_byte(uint8_t b) {
  static const char* hex = "0123456789abcdef";
  switch (b) {
    case '\t': return "\\t";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\\': return "\\\\";
    case '\'': return "\\'";
    default: break;
  }
  if (b >= 0x20 && b < 0x7f) return std::string(1, static_cast<char>(b));
  return std::string("\\x") + hex[b >> 4] + hex[b & 15];
}

std::vector<std::string> vocab_texts() {
  std::vector<std::string> t = {"<s>"};
  for (int b = 0; b < 256; ++b) t.push_back(escape_byte(static_cast<uint8_t>(b)));
  for (const char* s : {"th", "he", "the", " the", " t", "hell", "hello", "o w", " world", "\\n\\n", "\\n\\n\\n",
                        "ab", "abc", "abcd", "bcd", "\\'s", "it\\'s", "\\\\n", "\\xe4\\xb8\\x80", "\\xe4\\xb8",
                        "\\xe4\\xba\\x8c\\xe4\\xb8\\x80", "\\xC3\\xA9", "  ", "    ", "\\t\\t", "ab\\r\\n"}) {
    t.push_back(s);
  }
  return t;
}

std::vector<std::string> texts() {
  std::string mixed;
  for (int i = 0; i < 120; ++i) mixed.push_back(static_cast<char>((i * 37 + 11) % 256));
  return {"hello the world",
          "abcabdabcdbcd abc",
          "\xe4\xb8\x80\xe4\xba\x8c\xe4\xb8\x80\xe4\xb8\x80\xe4\xb8",
          "a\n\nb\n\n\nc\td\r\n\t\t",
          "it's a \\n test, it\\'s",
          "3\x19 and \xc3\xa9",
          "the  the    thethe\thello",
          mixed};
}

// llama.cpp c392e50's ids for texts() (see the file comment).
const std::vector<std::vector<int32_t>> kExpected = {
#include "rwkv_expected.inc"
};

std::filesystem::path write_vocab(const std::filesystem::path& dir) {
  gguf::Writer w;
  const std::string a = "rwkv6";
  w.set("general.architecture", gguf::Value::string(a));
  for (const char* k : {"block_count", "embedding_length", "feed_forward_length", "wkv.head_size",
                        "time_mix_extra_dim", "time_decay_extra_dim"}) {
    w.set(a + "." + k, gguf::Value::u32(64));
  }
  w.set(a + ".attention.head_count", gguf::Value::u32(0));
  w.set(a + ".context_length", gguf::Value::u32(1024));
  std::vector<gguf::Value> tokens, types;
  const std::vector<std::string> t = vocab_texts();
  for (size_t i = 0; i < t.size(); ++i) {
    tokens.push_back(gguf::Value::string(t[i]));
    types.push_back(gguf::Value::i32(i == 0 ? 3 : 1));  // <s> control, the rest normal
  }
  w.set("tokenizer.ggml.model", gguf::Value::string("rwkv"));
  w.set("tokenizer.ggml.tokens", gguf::Value::array(gguf::ValueType::STRING, std::move(tokens)));
  w.set("tokenizer.ggml.token_type", gguf::Value::array(gguf::ValueType::INT32, std::move(types)));
  const std::filesystem::path path = dir / "rwkv-vocab.gguf";
  w.open(path.string());
  w.close();
  return path;
}

class RwkvTokenizer : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("ferrite-rwkv-vocab-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(RwkvTokenizer, MatchesLlamaCpp) {
  const tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_file(write_vocab(dir_).string());
  const std::vector<std::string> in = texts();
  ASSERT_EQ(in.size(), kExpected.size());
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(tok.encode(in[i], /*add_special=*/true, /*parse_special=*/false), kExpected[i]) << "text " << i;
  }
}

// Decoding gives the bytes back (every byte has a token), special tokens as their text.
TEST_F(RwkvTokenizer, DecodeIsTheBytes) {
  const tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_file(write_vocab(dir_).string());
  for (const std::string& s : texts()) EXPECT_EQ(tok.decode(tok.encode(s, false, false), true), s);
  EXPECT_EQ(tok.token_to_piece(257 + 9, true), "\n\n");  // "\\n\\n"
  EXPECT_EQ(tok.token_to_piece(0, true), "<s>");
}

// A byte no token starts with, in a vocabulary without an unknown token: a clear error.
TEST_F(RwkvTokenizer, UnmatchableByteIsAnError) {
  gguf::Writer w;
  w.set("general.architecture", gguf::Value::string("rwkv6"));
  w.set("tokenizer.ggml.model", gguf::Value::string("rwkv"));
  w.set("tokenizer.ggml.tokens", gguf::Value::array(gguf::ValueType::STRING, {gguf::Value::string("a"),
                                                                            gguf::Value::string("ab")}));
  const auto path = dir_ / "small.gguf";
  w.open(path.string());
  w.close();
  const tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_file(path.string());
  EXPECT_EQ(tok.encode("abaa", false, false), (std::vector<int32_t>{1, 0, 0}));
  EXPECT_THROW(tok.encode("abc", false, false), InvalidArgument);
}

TEST_F(RwkvTokenizer, DISABLED_Write) {
  const char* out = std::getenv("FERRITE_TINY_OUT");
  ASSERT_NE(out, nullptr) << "set FERRITE_TINY_OUT";
  write_vocab(out);
  std::ofstream f(std::filesystem::path(out) / "rwkv-vocab.inp", std::ios::binary);
  const std::vector<std::string> in = texts();
  for (size_t i = 0; i < in.size(); ++i) f << (i ? "\n__ggml_vocab_test__\n" : "") << in[i];
}

}  // namespace
}  // namespace ferrite::test::rwkv_tok
