// Importance matrices: collection (sums of squared inputs per column, rows,
// passes) and llama.cpp's GGUF format (the legacy reader's test on llama.cpp's
// own file is in quantize_rmse_test.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/error.h"
#include "gguf/file.h"
#include "gguf/writer.h"
#include "quant/imatrix.h"
#include "quant/imatrix_collector.h"

namespace ferrite {
namespace {

TEST(ImatrixCollector, LegacyValuesAreMeanSquaresTimesCalls) {
  quant::ImatrixCollector c;
  const float a[6] = {1, 2, 3, -1, 0, 2};  // two rows of three
  const float b[3] = {2, 2, 2};
  c.add("blk.0.attn_q.weight", 1, 0, a, 2, 3);
  c.end_pass();
  c.add("blk.0.attn_q.weight", 1, 0, b, 1, 3);
  c.end_pass();
  c.end_pass();  // a pass without it does not count
  EXPECT_EQ(c.ncall("blk.0.attn_q.weight"), 2);
  const quant::Imatrix m = c.to_legacy(7, "text.txt");
  ASSERT_EQ(m.entries().size(), 1u);
  const quant::ImatrixEntry& e = m.entries()[0];
  EXPECT_EQ(e.ncall, 2);
  // Column means of the squares over the three rows: (1+1+4)/3, (4+0+4)/3, (9+4+4)/3; stored x ncall.
  EXPECT_FLOAT_EQ(e.values[0], 6.0f / 3 * 2);
  EXPECT_FLOAT_EQ(e.values[1], 8.0f / 3 * 2);
  EXPECT_FLOAT_EQ(e.values[2], 17.0f / 3 * 2);
  // The reader's importance is the mean square.
  EXPECT_FLOAT_EQ((*m.importance("blk.0.attn_q.weight"))[2], 17.0f / 3);
  EXPECT_EQ(m.last_chunk, 7);
  EXPECT_EQ(m.dataset, "text.txt");
}

TEST(ImatrixCollector, ExpertsAndPartialEntries) {
  quant::ImatrixCollector c;
  const float x[2] = {3, 4};
  c.add("blk.0.ffn_up_exps.weight", 3, 0, x, 1, 2);
  c.add("blk.0.ffn_up_exps.weight", 3, 2, x, 1, 2);  // expert 1 never runs
  c.add("blk.0.ffn_down_exps.weight", 2, 0, x, 1, 2);
  c.add("blk.0.ffn_down_exps.weight", 2, 1, x, 1, 2);
  c.end_pass();
  std::vector<std::string> skipped;
  const quant::Imatrix legacy = c.to_legacy(1, "t", &skipped);
  EXPECT_EQ(skipped, std::vector<std::string>{"blk.0.ffn_up_exps.weight"});
  ASSERT_NE(legacy.importance("blk.0.ffn_down_exps.weight"), nullptr);
  EXPECT_EQ(*legacy.importance("blk.0.ffn_down_exps.weight"), (std::vector<float>{9, 16, 9, 16}));

  // The GGUF form keeps the partial entry; its unused expert reads as 1.
  const std::vector<uint8_t> bytes = c.gguf_bytes({"t"}, 1, 16);
  const quant::Imatrix g = quant::Imatrix::parse(bytes.data(), bytes.size(), "t.gguf");
  ASSERT_NE(g.importance("blk.0.ffn_up_exps.weight"), nullptr);
  EXPECT_EQ(*g.importance("blk.0.ffn_up_exps.weight"), (std::vector<float>{9, 16, 1, 1, 9, 16}));
  EXPECT_THROW(c.add("blk.0.ffn_up_exps.weight", 4, 0, x, 1, 2), InvalidArgument);
}

TEST(ImatrixGguf, LayoutIsLlamaCpps) {
  quant::ImatrixCollector c;
  const float x[4] = {1, 2, 3, 4};
  c.add("blk.1.attn_k.weight", 1, 0, x, 2, 2);
  c.end_pass();
  const std::vector<uint8_t> bytes = c.gguf_bytes({"wiki.txt"}, 5, 512);
  const gguf::File f = gguf::File::parse(bytes.data(), bytes.size(), "t.gguf");
  EXPECT_EQ(f.get("general.type").as_string(), "imatrix");
  EXPECT_EQ(f.get("imatrix.chunk_count").as_uint(), 5u);
  EXPECT_EQ(f.get("imatrix.chunk_size").as_uint(), 512u);
  EXPECT_EQ(f.get("imatrix.datasets").items()[0].as_string(), "wiki.txt");
  const gguf::TensorInfo& sums = f.tensor("blk.1.attn_k.weight.in_sum2");
  const gguf::TensorInfo& counts = f.tensor("blk.1.attn_k.weight.counts");
  EXPECT_EQ(sums.type, TensorType::F32);
  EXPECT_EQ(sums.ne, (std::array<int64_t, 4>{2, 1, 1, 1}));
  EXPECT_EQ(counts.ne, (std::array<int64_t, 4>{1, 1, 1, 1}));
  float v[2], n;
  std::memcpy(v, sums.data, 8);
  std::memcpy(&n, counts.data, 4);
  EXPECT_EQ(v[0], 1 + 9);
  EXPECT_EQ(v[1], 4 + 16);
  EXPECT_EQ(n, 2);
}

TEST(ImatrixGguf, MalformedFilesAreRefused) {
  auto error_of = [](gguf::Writer& w, const std::vector<std::vector<uint8_t>>& data) -> std::string {
    const std::vector<uint8_t> b = w.to_bytes(data);
    try {
      quant::Imatrix::parse(b.data(), b.size(), "bad.gguf");
    } catch (const FormatError& e) {
      return e.what();
    }
    return "(no error)";
  };
  const std::vector<uint8_t> four(16, 0);
  gguf::Writer not_imatrix;
  not_imatrix.set("general.architecture", gguf::Value::string("llama"));
  EXPECT_NE(error_of(not_imatrix, {}).find("not an importance matrix"), std::string::npos);
  gguf::Writer no_counts;
  no_counts.set("general.type", gguf::Value::string("imatrix"));
  no_counts.add_tensor("w.in_sum2", TensorType::F32, {4, 1});
  EXPECT_NE(error_of(no_counts, {four}).find("has no w.counts"), std::string::npos);
  gguf::Writer bad_shape;
  bad_shape.set("general.type", gguf::Value::string("imatrix"));
  bad_shape.add_tensor("w.in_sum2", TensorType::F32, {4, 1});
  bad_shape.add_tensor("w.counts", TensorType::F32, {2, 1});
  EXPECT_NE(error_of(bad_shape, {four, std::vector<uint8_t>(8, 0)}).find("counts f32 [1, n_mat]"), std::string::npos);
  gguf::Writer negative;
  negative.set("general.type", gguf::Value::string("imatrix"));
  negative.add_tensor("w.in_sum2", TensorType::F32, {4, 1});
  negative.add_tensor("w.counts", TensorType::F32, {1, 1});
  std::vector<uint8_t> minus(4);
  const float m1 = -1.0f;
  std::memcpy(minus.data(), &m1, 4);
  EXPECT_NE(error_of(negative, {four, minus}).find("negative"), std::string::npos);
}

}  // namespace
}  // namespace ferrite
