// The safetensors reader: files written here from the format's description
// (u64 header length, JSON header, data buffer), good and bad. Every bad
// file must give a FormatError / ModelError / IoError naming the problem.
#include <gtest/gtest.h>

#include <cstring>

#include "convert/safetensors.h"
#include "core/error.h"
#include "hf_dir.h"

namespace ferrite {
namespace {

using convert::Checkpoint;
using convert::SafetensorsFile;
using test::Json;

convert::SafetensorsFile parse(const std::string& bytes) {
  return SafetensorsFile::parse(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "t.safetensors");
}

// A header spelled out by hand followed by `data` bytes.
std::string raw(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  const uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  return out + header + data;
}

template <typename Err>
std::string error_of(const std::string& bytes) {
  try {
    parse(bytes);
  } catch (const Err& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Safetensors, ReadsTensorsAndMetadata) {
  const std::vector<float> a = {1.0f, -2.0f, 3.5f, 0.25f, 8.0f, -0.5f};
  // f16 1.0 = 0x3c00, -2.0 = 0xc000; bf16 1.0 = 0x3f80, -2.0 = 0xc000.
  const std::string f16("\x00\x3c\x00\xc0", 4), bf16("\x80\x3f\x00\xc0", 4);
  double d[2] = {0.125, -1e-3};
  const std::string bytes = test::safetensors_bytes(
      {test::st_f32("a", {2, 3}, a), {"h", "F16", {2}, f16}, {"b", "BF16", {2}, bf16},
       {"d", "F64", {2}, std::string(reinterpret_cast<const char*>(d), 16)}},
      Json{{"format", "pt"}});
  const SafetensorsFile f = parse(bytes);
  EXPECT_EQ(f.metadata().at("format"), "pt");
  ASSERT_EQ(f.tensors().size(), 4u);
  const Checkpoint c = Checkpoint::from_file(parse(bytes));
  const convert::StTensor* t = c.find("a");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->shape, (std::vector<int64_t>{2, 3}));
  std::vector<float> out(6);
  convert::to_f32(*t, out.data());
  EXPECT_EQ(out, a);
  std::vector<float> two(2);
  convert::to_f32(*c.find("h"), two.data());
  EXPECT_EQ(two, (std::vector<float>{1.0f, -2.0f}));
  convert::to_f32(*c.find("b"), two.data());
  EXPECT_EQ(two, (std::vector<float>{1.0f, -2.0f}));
  convert::to_f32(*c.find("d"), two.data());
  EXPECT_EQ(two, (std::vector<float>{0.125f, static_cast<float>(-1e-3)}));
}

TEST(Safetensors, TruncatedFiles) {
  const std::string good = test::safetensors_bytes({test::st_f32("w", {4}, {1, 2, 3, 4})});
  EXPECT_NE(error_of<FormatError>(good.substr(0, 5)).find("file ends early"), std::string::npos);
  EXPECT_NE(error_of<FormatError>(good.substr(0, 20)).find("run past the end"), std::string::npos);
  // The header complete, the data cut: the tensor lies outside the buffer.
  EXPECT_NE(error_of<FormatError>(good.substr(0, good.size() - 3)).find("outside"), std::string::npos);
}

TEST(Safetensors, OffsetsOutOfRangeOrInconsistent) {
  const std::string data(16, '\0');
  EXPECT_NE(error_of<FormatError>(raw(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,32]}})", data))
                .find("outside"),
            std::string::npos);
  EXPECT_NE(error_of<FormatError>(raw(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[8,4]}})", data))
                .find("outside"),
            std::string::npos);
  // 18446744073709551615 = 2^64 - 1
  EXPECT_NE(error_of<FormatError>(
                raw(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,18446744073709551615]}})", data))
                .find("outside"),
            std::string::npos);
  EXPECT_NE(error_of<FormatError>(raw(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[-1,16]}})", data))
                .find("non-negative"),
            std::string::npos);
  // dtype and shape need 16 bytes; the offsets give 8.
  EXPECT_NE(error_of<FormatError>(raw(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,8]},)"
                                      R"("v":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})",
                                      data))
                .find("need 16"),
            std::string::npos);
  EXPECT_NE(error_of<FormatError>(raw(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                      R"("v":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                                      data))
                .find("overlaps"),
            std::string::npos);
  EXPECT_NE(error_of<FormatError>(raw(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})", data))
                .find("gap"),
            std::string::npos);
  EXPECT_NE(error_of<FormatError>(raw(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", data))
                .find("belong to none"),
            std::string::npos);
  // Element counts that overflow.
  EXPECT_NE(error_of<FormatError>(raw(R"({"w":{"dtype":"F32","shape":[1099511627776,1099511627776],)"
                                      R"("data_offsets":[0,16]}})",
                                      data))
                .find("too many elements"),
            std::string::npos);
}

TEST(Safetensors, MalformedHeaders) {
  const std::string data(16, '\0');
  EXPECT_NE(error_of<FormatError>(raw("{not json", data)).find("JSON"), std::string::npos);
  EXPECT_NE(error_of<FormatError>(raw("[1, 2]", data)).find("not a JSON object"), std::string::npos);
  EXPECT_NE(error_of<FormatError>(raw(R"({"w":{"dtype":"Q4","shape":[4],"data_offsets":[0,16]}})", data))
                .find("unknown dtype"),
            std::string::npos);
  EXPECT_NE(error_of<FormatError>(raw(R"({"w":{"shape":[4],"data_offsets":[0,16]}})", data)).find("dtype"),
            std::string::npos);
  EXPECT_NE(error_of<FormatError>(raw(R"({"__metadata__":{"a":1}})", "")).find("not a string"), std::string::npos);
  // A number too large for a double (nlohmann's out_of_range; found by the fuzzer).
  EXPECT_NE(error_of<FormatError>(raw(R"({"w":{"dtype":"F32","shape":[1e99999],"data_offsets":[0,16]}})", data))
                .find("JSON"),
            std::string::npos);
  std::string deep(100000, '[');
  EXPECT_NE(error_of<FormatError>(raw(deep, data)).find("nested deeper"), std::string::npos);
  // A header length beyond the format's 100 MB limit.
  std::string huge(8, '\0');
  const uint64_t n = 200ull << 20;
  std::memcpy(huge.data(), &n, 8);
  EXPECT_NE(error_of<FormatError>(huge + "{}").find("100 MB"), std::string::npos);
}

TEST(Safetensors, NonFloatWeightsAreRefused) {
  const std::string bytes = test::safetensors_bytes({{"i", "I32", {2}, std::string(8, '\0')}});
  const Checkpoint c = Checkpoint::from_file(parse(bytes));
  std::vector<float> out(2);
  try {
    convert::to_f32(*c.find("i"), out.data());
    FAIL() << "an I32 tensor was converted";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("I32"), std::string::npos);
  }
}

TEST(Safetensors, ShardedCheckpoint) {
  test::TempDir dir;
  test::write_bytes(dir.file("model-00001-of-00002.safetensors"),
                    test::safetensors_bytes({test::st_f32("a", {2}, {1, 2})}));
  test::write_bytes(dir.file("model-00002-of-00002.safetensors"),
                    test::safetensors_bytes({test::st_f32("b", {2}, {3, 4})}));
  Json index = {{"metadata", {{"total_size", 16}}},
                {"weight_map", {{"a", "model-00001-of-00002.safetensors"}, {"b", "model-00002-of-00002.safetensors"}}}};
  test::write_json(dir.file("model.safetensors.index.json"), index);
  const Checkpoint c = Checkpoint::open_dir(dir.path().string());
  ASSERT_EQ(c.tensors().size(), 2u);
  EXPECT_EQ(c.tensors()[0]->name, "a");
  EXPECT_EQ(c.files().size(), 2u);

  auto error_with = [&](const Json& idx) -> std::string {
    test::write_json(dir.file("model.safetensors.index.json"), idx);
    try {
      Checkpoint::open_dir(dir.path().string());
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  };
  Json missing_shard = index;
  missing_shard["weight_map"]["c"] = "model-00003-of-00003.safetensors";
  EXPECT_NE(error_with(missing_shard).find("missing"), std::string::npos);
  Json unlisted = index;
  unlisted["weight_map"].erase("b");
  EXPECT_NE(error_with(unlisted).find("does not list"), std::string::npos);
  Json wrong_file = index;
  wrong_file["weight_map"]["b"] = "model-00001-of-00002.safetensors";
  EXPECT_NE(error_with(wrong_file).find("not in the shard"), std::string::npos);
  Json escape = index;
  escape["weight_map"]["b"] = "../x.safetensors";
  EXPECT_NE(error_with(escape).find("not a file of the folder"), std::string::npos);

  // The same tensor in two shards.
  std::filesystem::remove(dir.file("model.safetensors.index.json"));
  test::write_bytes(dir.file("model-00002-of-00002.safetensors"),
                    test::safetensors_bytes({test::st_f32("a", {2}, {3, 4})}));
  try {
    Checkpoint::open_dir(dir.path().string());
    FAIL() << "a tensor in two shards was accepted";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("in both"), std::string::npos);
  }
}

TEST(Safetensors, FolderWithoutSafetensors) {
  test::TempDir dir;
  test::write_bytes(dir.file("pytorch_model.bin"), "x");
  try {
    Checkpoint::open_dir(dir.path().string());
    FAIL();
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("pytorch_model.bin"), std::string::npos);
  }
}

}  // namespace
}  // namespace ferrite
