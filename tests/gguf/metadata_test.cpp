// Typed metadata access: required/optional keys, conversions, per-layer
// arrays, and the errors that name the key.
#include <gtest/gtest.h>

#include "core/error.h"
#include "gguf/file.h"
#include "gguf/metadata.h"
#include "gguf/writer.h"
#include "support/test_data.h"

namespace {

using ferrite::ModelError;
using ferrite::gguf::File;
using ferrite::gguf::Metadata;
using ferrite::gguf::Value;
using ferrite::gguf::ValueType;
using ferrite::gguf::Writer;

class MetadataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Writer w;
    w.set("general.architecture", Value::string("llama"));
    w.set("llama.block_count", Value::u32(3));
    w.set("llama.rope.freq_base", Value::f32(10000.0f));
    w.set("llama.attention.head_count_kv",
          Value::array(ValueType::INT32, {Value::i32(8), Value::i32(4), Value::i32(2)}));
    w.set("llama.attention.head_count", Value::u32(16));
    w.set("neg", Value::i32(-5));
    w.set("names", Value::array(ValueType::STRING, {Value::string("a"), Value::string("b")}));
    bytes_ = w.to_bytes({});
    file_ = std::make_unique<File>(File::parse(bytes_.data(), bytes_.size(), "meta.gguf"));
  }
  std::vector<uint8_t> bytes_;
  std::unique_ptr<File> file_;
};

TEST_F(MetadataTest, RequiredAndOptional) {
  Metadata m(*file_);
  EXPECT_EQ(m.architecture(), "llama");
  EXPECT_EQ(m.arch_key("block_count"), "llama.block_count");
  EXPECT_EQ(m.get_uint("llama.block_count"), 3u);
  EXPECT_FLOAT_EQ(m.get_float("llama.rope.freq_base"), 10000.0f);
  EXPECT_FLOAT_EQ(m.get_float("llama.block_count"), 3.0f);  // integers widen to float
  EXPECT_FALSE(m.opt_uint("llama.context_length").has_value());
  EXPECT_EQ(m.get_int("neg"), -5);
  EXPECT_EQ(m.string_array("names"), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(m.string_array("absent").empty());
}

TEST_F(MetadataTest, ErrorsNameTheKeyAndFile) {
  Metadata m(*file_);
  try {
    m.get_uint("llama.context_length");
    FAIL() << "no error";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("meta.gguf"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("llama.context_length"), std::string::npos);
  }
  EXPECT_THROW(m.get_uint("neg"), ModelError);          // negative into unsigned
  EXPECT_THROW(m.get_string("llama.block_count"), ModelError);
  EXPECT_THROW(m.get_bool("llama.block_count"), ModelError);
  EXPECT_THROW(m.float_array("names"), ModelError);
}

TEST_F(MetadataTest, PerLayerValues) {
  Metadata m(*file_);
  EXPECT_EQ(m.per_layer_uint("llama.attention.head_count_kv", 3), (std::vector<uint64_t>{8, 4, 2}));
  EXPECT_EQ(m.per_layer_uint("llama.attention.head_count", 3), (std::vector<uint64_t>{16, 16, 16}));
  EXPECT_THROW(m.per_layer_uint("llama.attention.head_count_kv", 4), ModelError);
  EXPECT_THROW(m.per_layer_uint("absent", 2), ModelError);
}

TEST(MetadataShared, Stories260KSummary) {
  FERRITE_SHARED_FILE(path, "models/stories260K.gguf");
  const File f = File::open(path.string());
  const auto s = ferrite::gguf::summarize(f);
  // Facts from shared/README.md: 5 layers, dim 64, 8 query heads / 4 KV heads,
  // 512-token SentencePiece vocabulary.
  EXPECT_EQ(s.architecture, "llama");
  EXPECT_EQ(s.block_count, 5u);
  EXPECT_EQ(s.embedding_length, 64u);
  EXPECT_EQ(s.head_count, 8u);
  EXPECT_EQ(s.head_count_kv, 4u);
  EXPECT_EQ(s.n_tokens, 512u);
  EXPECT_EQ(s.tokenizer_model, "llama");
}

}  // namespace
