// Split models (-00001-of-0000N.gguf with split.* keys) open as one model.
#include <cstring>
#include <filesystem>
#include <unistd.h>

#include <gtest/gtest.h>

#include "core/error.h"
#include "gguf/file.h"
#include "gguf/writer.h"

namespace {

using ferrite::TensorType;
using ferrite::gguf::File;
using ferrite::gguf::Value;
using ferrite::gguf::Writer;

class GgufSplit : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("ferrite-split-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void write_part(uint16_t no, uint16_t count, const std::string& tensor, float value) {
    Writer w;
    if (no == 0) w.set("general.architecture", Value::string("llama"));
    w.set("split.no", Value::u16(no));
    w.set("split.count", Value::u16(count));
    w.set("split.tensors.count", Value::i32(count));
    w.add_tensor(tensor, TensorType::F32, {2});
    const float data[2] = {value, value};
    w.open(ferrite::gguf::split_path((dir_ / "m").string(), no, count));
    w.write_tensor_data(data, sizeof(data));
    w.close();
  }

  std::filesystem::path dir_;
};

TEST_F(GgufSplit, PartsLoadAsOneModel) {
  write_part(0, 3, "a", 1.0f);
  write_part(1, 3, "b", 2.0f);
  write_part(2, 3, "c", 3.0f);
  const File f = File::open((dir_ / "m-00001-of-00003.gguf").string());
  EXPECT_EQ(f.n_splits(), 3u);
  ASSERT_EQ(f.tensors().size(), 3u);
  const auto& c = f.tensor("c");
  EXPECT_EQ(c.split, 2u);
  float v;
  std::memcpy(&v, c.data, sizeof(v));
  EXPECT_EQ(v, 3.0f);
  EXPECT_EQ(f.get("general.architecture").as_string(), "llama");
}

TEST_F(GgufSplit, MissingPartIsAnError) {
  write_part(0, 2, "a", 1.0f);
  EXPECT_THROW(File::open((dir_ / "m-00001-of-00002.gguf").string()), ferrite::IoError);
}

TEST_F(GgufSplit, DuplicateTensorAcrossPartsIsAnError) {
  write_part(0, 2, "a", 1.0f);
  write_part(1, 2, "a", 2.0f);
  EXPECT_THROW(File::open((dir_ / "m-00001-of-00002.gguf").string()), ferrite::ModelError);
}

TEST_F(GgufSplit, OpeningALaterPartIsAnError) {
  write_part(0, 2, "a", 1.0f);
  write_part(1, 2, "b", 2.0f);
  EXPECT_THROW(File::open((dir_ / "m-00002-of-00002.gguf").string()), ferrite::ModelError);
}

TEST(GgufOpen, MissingFileIsIoError) {
  EXPECT_THROW(File::open("/nonexistent/dir/model.gguf"), ferrite::IoError);
}

TEST(GgufOpen, DirectoryIsIoError) { EXPECT_THROW(File::open("/tmp"), ferrite::IoError); }

}  // namespace
