// Malformed GGUF images, each built byte by byte, must be refused with a
// FormatError naming the field (and the offset) that is wrong — never a
// crash, a hang or a huge allocation.
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "gguf/file.h"

namespace {

using ferrite::FormatError;
using ferrite::gguf::File;

// Builds GGUF bytes independently of our writer.
struct Bytes {
  std::vector<uint8_t> b;
  template <typename T>
  Bytes& put(T v) {
    uint8_t tmp[sizeof(T)];
    std::memcpy(tmp, &v, sizeof(T));
    b.insert(b.end(), tmp, tmp + sizeof(T));
    return *this;
  }
  Bytes& str(const std::string& s) {
    put<uint64_t>(s.size());
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  Bytes& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    put<uint32_t>(0x46554747);
    put<uint32_t>(version);
    put<uint64_t>(n_tensors);
    put<uint64_t>(n_kv);
    return *this;
  }
  Bytes& kv_u32(const std::string& key, uint32_t v) {
    str(key);
    put<uint32_t>(4);
    put<uint32_t>(v);
    return *this;
  }
  Bytes& tensor(const std::string& name, std::vector<uint64_t> ne, uint32_t type, uint64_t offset) {
    str(name);
    put<uint32_t>(static_cast<uint32_t>(ne.size()));
    for (uint64_t d : ne) put<uint64_t>(d);
    put<uint32_t>(type);
    put<uint64_t>(offset);
    return *this;
  }
  Bytes& pad(size_t align = 32) {
    while (b.size() % align) b.push_back(0);
    return *this;
  }
  Bytes& zeros(size_t n) {
    b.insert(b.end(), n, 0);
    return *this;
  }
};

constexpr uint32_t kF32 = 0;
constexpr uint32_t kQ4_0 = 2;

// Parses `bytes`, expecting a FormatError whose field contains `field`.
// Returns the error for further checks.
FormatError expect_error(const Bytes& bytes, const std::string& field) {
  try {
    File::parse(bytes.b.data(), bytes.b.size(), "bad.gguf");
  } catch (const FormatError& e) {
    EXPECT_NE(e.field().find(field), std::string::npos) << "field was: " << e.field() << "; " << e.what();
    EXPECT_NE(std::string(e.what()).find("bad.gguf: at byte"), std::string::npos) << e.what();
    EXPECT_LE(e.offset(), bytes.b.size());
    return e;
  }
  ADD_FAILURE() << "no FormatError for field " << field;
  return FormatError("", 0, "", "");
}

TEST(GgufMalformed, ValidMinimalFileParses) {
  Bytes b;
  b.header(1, 1).kv_u32("general.alignment", 32).tensor("t", {4}, kF32, 0).pad().zeros(16);
  const File f = File::parse(b.b.data(), b.b.size(), "ok.gguf");
  ASSERT_EQ(f.tensors().size(), 1u);
  EXPECT_EQ(f.tensors()[0].n_bytes, 16u);
}

TEST(GgufMalformed, EmptyFile) { expect_error(Bytes{}, "magic"); }

TEST(GgufMalformed, BadMagic) {
  Bytes b;
  b.put<uint32_t>(0x46554746).put<uint32_t>(3).put<uint64_t>(0).put<uint64_t>(0);
  EXPECT_EQ(expect_error(b, "magic").offset(), 0u);
}

TEST(GgufMalformed, VersionOne) { EXPECT_EQ(expect_error(Bytes{}.header(0, 0, 1), "version").offset(), 4u); }

TEST(GgufMalformed, VersionFuture) { expect_error(Bytes{}.header(0, 0, 4), "version"); }

TEST(GgufMalformed, TruncatedInVersion) {
  Bytes b;
  b.put<uint32_t>(0x46554747).put<uint16_t>(3);
  expect_error(b, "version");
}

TEST(GgufMalformed, HugeTensorCount) {
  EXPECT_EQ(expect_error(Bytes{}.header(1ull << 60, 0), "tensor count").offset(), 8u);
}

TEST(GgufMalformed, HugeMetadataCount) {
  EXPECT_EQ(expect_error(Bytes{}.header(0, ~0ull), "metadata count").offset(), 16u);
}

TEST(GgufMalformed, HugeKeyLength) {
  Bytes b;
  b.header(0, 1).put<uint64_t>(1ull << 62).zeros(32);
  EXPECT_EQ(expect_error(b, "metadata key").offset(), 24u);
}

TEST(GgufMalformed, EmptyKey) {
  Bytes b;
  b.header(0, 1).kv_u32("", 1);
  expect_error(b, "metadata key");
}

TEST(GgufMalformed, DuplicateKey) {
  Bytes b;
  b.header(0, 2).kv_u32("a.b", 1).kv_u32("a.b", 2);
  expect_error(b, "'a.b'");
}

TEST(GgufMalformed, UnknownValueType) {
  Bytes b;
  b.header(0, 1).str("k").put<uint32_t>(13).put<uint32_t>(0);
  expect_error(b, "type of 'k'");
}

TEST(GgufMalformed, BoolNotZeroOrOne) {
  Bytes b;
  b.header(0, 1).str("k").put<uint32_t>(7).put<uint8_t>(2);
  expect_error(b, "value of 'k'");
}

TEST(GgufMalformed, ArrayOfUnknownType) {
  Bytes b;
  b.header(0, 1).str("k").put<uint32_t>(9).put<uint32_t>(99).put<uint64_t>(1);
  expect_error(b, "value of 'k'");
}

TEST(GgufMalformed, HugeArrayLength) {
  Bytes b;
  b.header(0, 1).str("k").put<uint32_t>(9).put<uint32_t>(4).put<uint64_t>(1ull << 61);
  expect_error(b, "array length");
}

TEST(GgufMalformed, HugeStringArrayLength) {
  Bytes b;
  b.header(0, 1).str("k").put<uint32_t>(9).put<uint32_t>(8).put<uint64_t>(1ull << 40).zeros(64);
  expect_error(b, "array length");
}

TEST(GgufMalformed, ArraysNestedTooDeep) {
  Bytes b;
  b.header(0, 1).str("k").put<uint32_t>(9);
  for (int i = 0; i < 40; ++i) b.put<uint32_t>(9).put<uint64_t>(1);
  b.put<uint32_t>(4).put<uint64_t>(0);
  expect_error(b, "value of 'k'");
}

TEST(GgufMalformed, TruncatedStringValue) {
  Bytes b;
  b.header(0, 1).str("k").put<uint32_t>(8).put<uint64_t>(10).put<uint32_t>(0);
  expect_error(b, "value of 'k'");
}

TEST(GgufMalformed, AlignmentWrongType) {
  Bytes b;
  b.header(0, 1).str("general.alignment").put<uint32_t>(10).put<uint64_t>(32);
  expect_error(b, "general.alignment");
}

TEST(GgufMalformed, AlignmentZero) { expect_error(Bytes{}.header(0, 1).kv_u32("general.alignment", 0), "general.alignment"); }

TEST(GgufMalformed, AlignmentNotPowerOfTwo) {
  expect_error(Bytes{}.header(0, 1).kv_u32("general.alignment", 48), "general.alignment");
}

TEST(GgufMalformed, TooManyDimensions) {
  Bytes b;
  b.header(1, 0).tensor("t", {1, 1, 1, 1, 1}, kF32, 0).pad().zeros(32);
  expect_error(b, "tensor 't' n_dims");
}

TEST(GgufMalformed, ElementCountOverflow) {
  Bytes b;
  b.header(1, 0).tensor("t", {1ull << 40, 1ull << 40}, kF32, 0).pad().zeros(32);
  expect_error(b, "tensor 't' ne[1]");
}

TEST(GgufMalformed, NegativeDimension) {
  Bytes b;
  b.header(1, 0).tensor("t", {~0ull}, kF32, 0).pad().zeros(32);
  expect_error(b, "tensor 't' ne[0]");
}

TEST(GgufMalformed, RetiredTensorType) {
  Bytes b;
  b.header(1, 0).tensor("t", {32}, 4, 0).pad().zeros(32);
  expect_error(b, "tensor 't' type");
}

TEST(GgufMalformed, UnknownTensorType) {
  Bytes b;
  b.header(1, 0).tensor("t", {32}, 1000, 0).pad().zeros(32);
  expect_error(b, "tensor 't' type");
}

TEST(GgufMalformed, RowNotMultipleOfBlock) {
  Bytes b;
  b.header(1, 0).tensor("t", {31}, kQ4_0, 0).pad().zeros(32);
  expect_error(b, "tensor 't' ne[0]");
}

TEST(GgufMalformed, MisalignedOffset) {
  Bytes b;
  b.header(1, 0).tensor("t", {4}, kF32, 8).pad().zeros(64);
  expect_error(b, "tensor 't' offset");
}

TEST(GgufMalformed, TensorDataPastEnd) {
  Bytes b;
  b.header(1, 0).tensor("t", {64}, kF32, 0).pad().zeros(100);
  expect_error(b, "tensor 't' data");
}

TEST(GgufMalformed, TensorOffsetFarPastEnd) {
  Bytes b;
  b.header(1, 0).tensor("t", {4}, kF32, 1ull << 50).pad().zeros(32);
  expect_error(b, "tensor 't' data");
}

TEST(GgufMalformed, OverlappingTensors) {
  Bytes b;
  b.header(2, 0).tensor("a", {16}, kF32, 0).tensor("b", {16}, kF32, 32).pad().zeros(128);
  expect_error(b, "tensor 'b' data");
}

TEST(GgufMalformed, DuplicateTensorName) {
  Bytes b;
  b.header(2, 0).tensor("a", {8}, kF32, 0).tensor("a", {8}, kF32, 32).pad().zeros(64);
  expect_error(b, "tensor 'a'");
}

TEST(GgufMalformed, TruncatedTensorInfo) {
  Bytes b;
  b.header(1, 0).str("t").put<uint32_t>(2).put<uint64_t>(4);
  expect_error(b, "tensor 't' ne[1]");
}

TEST(GgufMalformed, MissingDataSection) {
  Bytes b;
  b.header(1, 0).tensor("t", {4}, kF32, 0);
  b.b.push_back(0);  // not yet aligned, and no data follows
  expect_error(b, "tensor");
}

TEST(GgufMalformed, FewerTensorInfosThanCounted) {
  Bytes b;
  b.header(3, 0).tensor("a", {8}, kF32, 0).pad().zeros(32);
  expect_error(b, "tensor #");
}

}  // namespace
