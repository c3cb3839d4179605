// LoRA adapters applied at run time (backend/lora.h, runtime/lora_state.h)
// against the same adapters merged into the weights (W + s B A, merged here
// in double into a GGUF this test writes): the logits agree within f32
// rounding, at every CPU instruction-set level; several adapters add up;
// sequences with different adapter sets in one batch give what each gives
// alone; bad adapter files are refused with a clear error.
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "convert/lora_writer.h"
#include "core/error.h"
#include "cpu/features.h"
#include "gguf/writer.h"
#include "model/lora_adapter.h"
#include "model/model.h"
#include "runtime/context.h"
#include "support/logits.h"
#include "support/lora_merge.h"
#include "support/temp_dir.h"
#include "support/test_data.h"

namespace ferrite {
namespace {

const std::vector<std::string> kAllTargets = {"attn_q.weight",   "attn_k.weight", "attn_v.weight",
                                              "attn_output.weight", "ffn_gate.weight", "ffn_up.weight",
                                              "ffn_down.weight", "output.weight"};
// f32 products of W x + s B (A x) against (W + s B A) x differ in rounding
// only, which the f16 KV cache can turn into an f16 ulp of a cached value:
// the F32 goldens' tolerance (tests/model/golden_f32_test.cpp).
constexpr double kTol = 1e-3;
// A's and B's values: the adapted products move by a few tens of percent.
constexpr float kStddev = 0.1f;

std::vector<float> all_logits(const std::shared_ptr<const model::Model>& m, const std::vector<int32_t>& tokens,
                              const std::vector<std::shared_ptr<const model::LoraAdapter>>& lora = {},
                              std::vector<float> scales = {}) {
  runtime::Context ctx(m, {.n_ctx = 128, .n_threads = 2, .lora = lora, .lora_scales = std::move(scales)});
  const auto l = ctx.eval(tokens, 0, true);
  return {l.begin(), l.end()};
}

class Lora : public ::testing::Test {
 protected:
  void SetUp() override {
    FERRITE_SHARED_FILE(model_path, "models/stories260K.gguf");
    path_ = model_path.string();
    base_ = model::Model::load(path_);
    tokens_ = test::random_tokens(12, base_->hparams().n_vocab, 5);
  }
  convert::LoraFile random(uint32_t seed, const std::vector<std::string>& targets, int64_t rank = 4,
                           float alpha = 8.0f) const {
    return convert::random_lora(base_->file(), targets, rank, alpha, kStddev, seed);
  }
  std::shared_ptr<const model::LoraAdapter> write(const convert::LoraFile& f, const std::string& name,
                                                  TensorType t = TensorType::F32) {
    convert::write_lora(f, dir_.file(name), t);
    return model::LoraAdapter::load(dir_.file(name), *base_);
  }
  std::shared_ptr<const model::Model> merged(const std::vector<std::pair<const convert::LoraFile*, float>>& a) {
    const std::string p = dir_.file("merged" + std::to_string(n_merged_++) + ".gguf");
    test::write_merged(base_->file(), a, p);
    return model::Model::load(p);
  }
  void expect_close(const std::vector<float>& got, const std::vector<float>& want, const std::vector<float>& base,
                    double tol = kTol) {
    const double err = test::max_abs_diff(got, want), moved = test::max_abs_diff(want, base);
    EXPECT_LE(err, tol);
    // The adapter moves the logits far more than the tolerance.
    EXPECT_GT(moved, 100 * tol);
    std::printf("  max |logit - merged| %.3g, the adapter moves logits by up to %.3g\n", err, moved);
  }

  test::TempDir dir_{"lora"};
  std::string path_;
  std::shared_ptr<const model::Model> base_;
  std::vector<int32_t> tokens_;
  int n_merged_ = 0;
};

TEST_F(Lora, EqualsMergedModelAtEveryIsaLevel) {
  const convert::LoraFile f = random(1, kAllTargets);
  const auto ad = write(f, "a.gguf");
  const auto m = merged({{&f, 0.75f}});
  const cpu::IsaCap saved = cpu::active_isa_cap();
  for (int c = 0; c <= static_cast<int>(cpu::host_isa_cap()); ++c) {
    const auto cap = static_cast<cpu::IsaCap>(c);
    if (cpu::set_isa_cap(cap) != cap) continue;
    SCOPED_TRACE(cpu::isa_cap_name(cap));
    expect_close(all_logits(base_, tokens_, {ad}, {0.75f}), all_logits(m, tokens_), all_logits(base_, tokens_));
  }
  cpu::set_isa_cap(saved);
}

TEST_F(Lora, SeveralAdaptersAddUp) {
  const convert::LoraFile f1 = random(2, {"attn_q.weight", "attn_v.weight", "ffn_down.weight"});
  const convert::LoraFile f2 = random(3, {"attn_q.weight", "ffn_up.weight", "output.weight"}, 8, 0.0f);
  const auto a1 = write(f1, "a1.gguf"), a2 = write(f2, "a2.gguf");
  const auto m = merged({{&f1, 0.5f}, {&f2, -0.05f}});
  expect_close(all_logits(base_, tokens_, {a1, a2}, {0.5f, -0.05f}), all_logits(m, tokens_),
               all_logits(base_, tokens_));
}

TEST_F(Lora, ZeroScaleIsTheBaseModel) {
  const auto a = write(random(4, kAllTargets), "a.gguf");
  EXPECT_EQ(all_logits(base_, tokens_, {a}, {0.0f}), all_logits(base_, tokens_));
}

TEST_F(Lora, F16AdapterEqualsMergedModel) {
  // Values exactly representable in f16, so that the file and the merge hold the same numbers.
  convert::LoraFile f = random(5, kAllTargets);
  for (auto& p : f.pairs) {
    for (auto* v : {&p.a, &p.b}) {
      for (float& x : *v) x = std::ldexp(std::round(std::ldexp(x, 8)), -8);
    }
  }
  const auto ad = write(f, "a16.gguf", TensorType::F16);
  // The f16 product rounds its activations to f16 (as llama.cpp's does): the
  // adapter's term carries that rounding (a few 1e-4 of itself).
  expect_close(all_logits(base_, tokens_, {ad}, {0.5f}), all_logits(merged({{&f, 0.5f}}), tokens_),
               all_logits(base_, tokens_), 1e-2);
}

TEST_F(Lora, SequencesWithDifferentAdaptersInOneBatchEqualEachAlone) {
  const auto a1 = write(random(6, kAllTargets), "a1.gguf");
  const auto a2 = write(random(7, {"attn_k.weight", "ffn_gate.weight", "output.weight"}), "a2.gguf");
  const std::vector<std::vector<float>> sets = {{1.0f, 0.0f}, {0.0f, 1.0f}, {0.5f, 2.0f}, {0.0f, 0.0f}};
  const int n_seq = static_cast<int>(sets.size());
  auto prompt = [&](int s) { return test::random_tokens(5 + 3 * s, base_->hparams().n_vocab, 20 + s); };
  // Each alone.
  std::vector<std::vector<float>> alone;
  for (int s = 0; s < n_seq; ++s) {
    runtime::Context ctx(base_, {.n_ctx = 128, .n_threads = 2, .lora = {a1, a2}, .lora_scales = sets[s]});
    const auto l = ctx.eval(prompt(s), 0, true);
    alone.emplace_back(l.begin(), l.end());
  }
  // Together: every prompt in one batch, each sequence with its own scales.
  runtime::Context ctx(base_, {.n_ctx = 256, .n_threads = 2, .lora = {a1, a2}});
  runtime::Batch b;
  for (int s = 0; s < n_seq; ++s) {
    ctx.lora().set_scales(sets[s], s);
    const auto p = prompt(s);
    for (size_t i = 0; i < p.size(); ++i) b.add(p[i], static_cast<int32_t>(i), s, true);
  }
  ctx.decode(b);
  const int64_t nv = ctx.n_vocab();
  int64_t row = 0;
  for (int s = 0; s < n_seq; ++s) {
    SCOPED_TRACE("sequence " + std::to_string(s));
    const int64_t n = static_cast<int64_t>(prompt(s).size());
    std::vector<float> got;
    for (int64_t i = 0; i < n; ++i, ++row) {
      const auto l = ctx.logits(row);
      got.insert(got.end(), l.begin(), l.end());
    }
    ASSERT_EQ(got.size(), static_cast<size_t>(n * nv));
    EXPECT_LE(test::max_abs_diff(got, alone[static_cast<size_t>(s)]), kTol);
  }
}

// --- bad files -------------------------------------------------------------

struct BadCase {
  const char* what;
  std::function<void(gguf::Writer&)> meta;  // changes to the metadata
  std::string tensor_a, tensor_b;           // names (default: blk.0.attn_q.weight.lora_a / _b)
  std::vector<int64_t> ne_a, ne_b;
  TensorType type = TensorType::F32;
  const char* expect;                       // a phrase of the error
};

std::string write_bad(const test::TempDir& dir, const model::Model& m, const BadCase& c) {
  const int64_t n = m.hparams().n_embd;
  gguf::Writer w;
  w.set("general.architecture", gguf::Value::string("llama"));
  w.set("general.type", gguf::Value::string("adapter"));
  w.set("adapter.type", gguf::Value::string("lora"));
  w.set("adapter.lora.alpha", gguf::Value::f32(4.0f));
  if (c.meta) c.meta(w);
  const std::string na = c.tensor_a.empty() ? "blk.0.attn_q.weight.lora_a" : c.tensor_a;
  const std::string nb = c.tensor_b.empty() ? "blk.0.attn_q.weight.lora_b" : c.tensor_b;
  const std::vector<int64_t> ea = c.ne_a.empty() ? std::vector<int64_t>{n, 32} : c.ne_a;
  const std::vector<int64_t> eb = c.ne_b.empty() ? std::vector<int64_t>{32, n} : c.ne_b;
  std::vector<std::vector<uint8_t>> data;
  for (const auto& [name, ne] : {std::pair{na, ea}, std::pair{nb, eb}}) {
    if (name == "-") continue;
    w.add_tensor(name, c.type, ne);
    uint64_t elems = 1;
    for (int64_t d : ne) elems *= static_cast<uint64_t>(d);
    data.emplace_back(tensor_row_bytes(c.type, static_cast<uint64_t>(ne[0])) * (elems / static_cast<uint64_t>(ne[0])), 0);
  }
  const std::string path = dir.file(std::string("bad-") + std::to_string(std::hash<std::string>{}(c.what)) + ".gguf");
  w.open(path);
  for (const auto& d : data) w.write_tensor_data(d.data(), d.size());
  w.close();
  return path;
}

TEST_F(Lora, BadAdapterFilesGiveClearErrors) {
  const int64_t n = base_->hparams().n_embd;
  const std::vector<BadCase> cases = {
      {"not an adapter", [](gguf::Writer& w) { w.set("general.type", gguf::Value::string("model")); }, "", "", {}, {},
       TensorType::F32, "not 'adapter'"},
      {"not lora", [](gguf::Writer& w) { w.set("adapter.type", gguf::Value::string("control_vector")); }, "", "", {},
       {}, TensorType::F32, "only 'lora'"},
      {"wrong arch", [](gguf::Writer& w) { w.set("general.architecture", gguf::Value::string("gemma")); }, "", "",
       {}, {}, TensorType::F32, "architecture 'gemma'"},
      {"alpha not a number", [](gguf::Writer& w) { w.set("adapter.lora.alpha", gguf::Value::string("x")); }, "", "",
       {}, {}, TensorType::F32, "adapter.lora.alpha"},
      {"unknown tensor", nullptr, "blk.9.attn_q.weight.lora_a", "blk.9.attn_q.weight.lora_b", {}, {},
       TensorType::F32, "not in the model"},
      {"odd suffix", nullptr, "blk.0.attn_q.weight.lora_c", "-", {}, {}, TensorType::F32, "neither"},
      {"half a pair", nullptr, "", "-", {}, {}, TensorType::F32, "but not lora_b"},
      {"not adaptable", nullptr, "token_embd.weight.lora_a", "token_embd.weight.lora_b", {}, {}, TensorType::F32,
       "applies adapters to"},
      {"A of another width", nullptr, "", "", {n + 32, 32}, {}, TensorType::F32, "expected lora_a"},
      {"B of another height", nullptr, "", "", {}, {32, n + 1}, TensorType::F32, "expected lora_a"},
      {"ranks differ", nullptr, "", "", {n, 32}, {64, n}, TensorType::F32, "expected lora_a"},
      {"quantized type", nullptr, "", "", {}, {}, TensorType::Q4_0, "adapters take"},
      {"3-D", nullptr, "", "", {n, 32, 2}, {}, TensorType::F32, "not a matrix"},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.what);
    const std::string p = write_bad(dir_, *base_, c);
    try {
      model::LoraAdapter::load(p, *base_);
      ADD_FAILURE() << "loaded";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(c.expect), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
    }
  }
}

TEST_F(Lora, ContextRefusesAdaptersOfAnotherModelAndWrongScales) {
  const convert::LoraFile f = random(8, {"attn_q.weight"});
  const auto a = write(f, "a.gguf");
  const auto other = model::Model::load(path_);
  const runtime::ContextParams mine{.n_ctx = 64, .lora = {a}};
  runtime::ContextParams two_scales = mine;
  two_scales.lora_scales = {1.0f, 2.0f};
  EXPECT_THROW(runtime::Context(other, mine), InvalidArgument);
  EXPECT_THROW(runtime::Context(base_, two_scales), InvalidArgument);
  runtime::Context ctx(base_, mine);
  const float bad[] = {NAN};
  EXPECT_THROW(ctx.lora().set_scales(bad, 0), InvalidArgument);
  const float two[] = {1.0f, 1.0f};
  EXPECT_THROW(ctx.lora().set_scales(two, 0), InvalidArgument);
  EXPECT_THROW(ctx.lora().set_scales(std::span<const float>(two, 1), 9999), InvalidArgument);
}

}  // namespace
}  // namespace ferrite
