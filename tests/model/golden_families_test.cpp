// The families of issue 27 without a model in the shared data (olmo2,
// command-r, cohere2, exaone, internlm2, minicpm, granitemoe, olmoe, xverse,
// orion, baichuan, stablelm, olmo, nemotron, plamo, dbrx, qwen2vl;
// tiny_families()) against
// llama.cpp c392e50 on tiny random F32 models (tiny_families.h): the test
// writes the same file llama.cpp evaluated and compares every position's
// top-20 logits and log-sum-exp with tests/model/golden/<family>.p<N>.json
// (golden_dump's numbers), the prompt in one pass and in passes of 7 tokens.
// Tolerance as GoldenArchs: 1e-3 absolute (F32 weights; both engines round q,
// the attention probabilities and the KV cache to f16); 3e-3 for the 32
// layers of baichuan (kDeepTolerance).
// Each family's distinctive feature is shown to matter: the same weights
// with it neutralised (tiny_families.h, quirk = false) miss the golden
// (olmo: embeddings shifted by a constant still meet it, as only its
// mean-free LayerNorms allow).
//
// phimoe is not checked here: llama.cpp c392e50 runs Phi-3.5-MoE with
// RMSNorms, a renormalised softmax top 2 and no sliding window where
// transformers' PhimoeForCausalLM has LayerNorms, sparsemixer routing and
// the window. Its goldens for the tiny phimoe file (golden/phimoe.p*.json)
// are 3.32 (p1) and 2.85 (p2) from the double-precision reference of the
// definition, which meets them within 1.2e-4 under llama.cpp's definition
// (tests/model/phimoe_test.cpp, where ferrite is within 2.6e-4 of the
// reference; the converted transformers checkpoint, tests/convert: within
// 1.4e-4 of transformers with an f16 cache, 1.8e-7 with f32).
//
// Regenerating the goldens (llama.cpp built outside the repository):
//   build/tests/test_model --gtest_also_run_disabled_tests
//       --gtest_filter='TinyFamilies.DISABLED_Write' with FERRITE_TINY_OUT=DIR
//   golden_dump -m DIR/tiny-<family>.gguf -i <the prompt's ids> --no-bos > <family>.p<N>.json
// ik_llama.cpp's families (tiny_ik_families(): smollm3, glm4, ernie4_5,
// ernie4_5-moe, hunyuan-moe, glm4moe) the same way with the dumper built against
// ik_llama.cpp 8337e4c (/work/peers/tools/golden-ik/golden_dump, F32, -t 2),
// checked at kIkTolerance.
// qwen2vl's need a golden_dump that gives llama.cpp 4 position components
// per token (its M-RoPE input), all equal to the position as llama.cpp's
// Qwen2-VL example does for text (`--mrope` of the lead's dumper copy): the
// plain dumper leaves 3 of them unset. The embedding families' (below) need
// its embeddings mode (`--embd`).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "cpu/thread_pool.h"
#include "golden.h"
#include "model/model.h"
#include "model/pooling.h"
#include "model/tiny_families.h"
#include "single_sequence.h"

namespace ferrite {
namespace {

constexpr double kAbsTolerance = 1e-3;
// baichuan's 32 layers (llama.cpp c392e50 runs it only with 32 or 40): its
// position 0 agrees to 1e-6 and every later one is off by 4e-4 to 1.1e-3,
// the mark of one f16 rounding flip of an early cached key or value carried
// through the layers above (the two-layer models: 1e-6 where no flip
// happens, up to 2.5e-4 where one does); a wrong definition misses by 2.
constexpr double kDeepTolerance = 3e-3;
constexpr int64_t kDeep = 8;  // layers from which kDeepTolerance applies
// ik_llama.cpp's goldens (tiny_ik_families(): smollm3, glm4, ernie4_5,
// ernie4_5-moe, hunyuan-moe; golden_dump built against ik_llama.cpp 8337e4c,
// AVX2, flash attention and fused operations off): ik_llama.cpp's CPU
// arithmetic is not c392e50's: on the same tiny xverse file its logits
// differ from c392e50's golden by 7.7e-4 (p1) and 7.0e-4 (p2), and on these
// families' files from the double-precision reference of ref_ik_families.h
// (which ferrite matches within 1e-3, ik_families_test.cpp) by 5.3e-4 to
// 1.0e-3, and 2.1e-3 for glm4 p2 (measured without ferrite; glm4moe, added
// later: ferrite within 1.8e-4 of the reference and 1.4e-3 of ik_llama.cpp). 3e-3 bounds
// that floor; a neutralised quirk still misses by 0.25 and more.
constexpr double kIkTolerance = 3e-3;
bool is_ik_family(const std::string& family) {
  const std::vector<std::string>& ik = test::tiny_ik_families();
  return std::find(ik.begin(), ik.end(), family) != ik.end();
}
// A neutralised quirk must move some logit by this much at least.
constexpr double kQuirkSeen = 50 * kAbsTolerance;

std::filesystem::path golden_path(const std::string& family, int prompt) {
  return std::filesystem::path(FERRITE_SOURCE_DIR) / "tests/model/golden" /
         (family + ".p" + std::to_string(prompt) + ".json");
}

// Largest error over the positions of one evaluation against the golden.
double worst_error(const model::Model& m, const test::Golden& g, int64_t n_batch) {
  test::SingleSequence seq(m, 64, 2);
  const std::vector<float> logits = seq.eval(g.tokens, n_batch);
  const size_t nv = static_cast<size_t>(m.hparams().n_vocab);
  EXPECT_EQ(g.positions.size(), g.tokens.size());
  double worst = 0;
  for (size_t i = 0; i < std::min(g.positions.size(), g.tokens.size()); ++i) {
    worst = std::max(worst, test::max_logit_error(std::span<const float>(logits.data() + i * nv, nv), g.positions[i]));
  }
  return worst;
}

struct Case {
  std::string family;
  int prompt;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.family << " p" << c.prompt; }

class GoldenFamilies : public ::testing::TestWithParam<Case> {};

TEST_P(GoldenFamilies, TopLogitsAndLogSumExp) {
  const Case& c = GetParam();
  const test::Golden g = test::load_golden(golden_path(c.family, c.prompt));
  ASSERT_EQ(g.tokens, test::tiny_family_prompt(c.prompt)) << "the golden was made for other tokens";
  const auto tiny = test::make_tiny_family(c.family);
  auto m = model::Model::load(tiny->path().string());
  ASSERT_EQ(m->hparams().arch, c.family);
  const double tolerance =
      is_ik_family(c.family) ? kIkTolerance : m->hparams().n_layer >= kDeep ? kDeepTolerance : kAbsTolerance;
  for (int64_t n_batch : {int64_t{512}, int64_t{7}}) {
    const double err = worst_error(*m, g, n_batch);
    EXPECT_LE(err, tolerance) << c.family << " p" << c.prompt << ", batch " << n_batch;
    std::printf("  %s p%d (batch %lld): max |logit error| %.3g\n", c.family.c_str(), c.prompt,
                static_cast<long long>(n_batch), err);
  }
}

// The same weights without the family's quirk, on the first prompt.
class GoldenFamilyQuirks : public ::testing::TestWithParam<Case> {};

TEST_P(GoldenFamilyQuirks, QuirkMatters) {
  const Case& c = GetParam();
  const test::Golden g = test::load_golden(golden_path(c.family, c.prompt));
  const auto plain = test::make_tiny_family(c.family, /*quirk=*/false);
  auto m = model::Model::load(plain->path().string());
  const double err = worst_error(*m, g, 512);
  if (c.family == "olmo") {
    // Shifted embeddings (tiny_families.h): still the golden, as only LayerNorms make them.
    EXPECT_LE(err, kAbsTolerance) << "olmo: shifted embeddings changed the logits (a norm that is not mean-free)";
  } else {
    EXPECT_GT(err, kQuirkSeen) << c.family << ": the golden does not tell the quirk apart";
  }
  std::printf("  %s without its quirk: max |logit error| %.3g\n", c.family.c_str(), err);
}

std::vector<Case> cases(std::initializer_list<int> prompts) {
  std::vector<Case> v;
  for (const std::vector<std::string>* list : {&test::tiny_families(), &test::tiny_ik_families()}) {
    for (const std::string& f : *list) {
      if (!test::tiny_family_has_golden(f)) continue;
      for (int p : prompts) v.push_back({f, p});
    }
  }
  return v;
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  return test::golden_case_name(info.param.family + ".p" + std::to_string(info.param.prompt) + ".json");
}

INSTANTIATE_TEST_SUITE_P(Tiny, GoldenFamilies, ::testing::ValuesIn(cases({1, 2})), case_name);
INSTANTIATE_TEST_SUITE_P(Tiny, GoldenFamilyQuirks, ::testing::ValuesIn(cases({1})), case_name);

// dbrx's clip of Q|K|V comes from the file (llama.cpp requires the key too):
// a file without it, or with a clip that is not positive, is refused by
// name; a whole-head RoPE is checked too (llama.cpp asserts it). The same
// file with a clip of 8 and whole-head RoPE loads.
TEST(TinyFamilies, DbrxRefusesBadClampOrPartialRope) {
  namespace d = test::tiny_family_detail;
  struct Bad {
    std::optional<float> clamp;
    bool partial_rope;
    const char* says;  // null: loads
  };
  for (const Bad& bad : {Bad{std::nullopt, false, "dbrx.attention.clamp_kqv"}, Bad{0.0f, false, "must be positive"},
                         Bad{-8.0f, false, "must be positive"}, Bad{8.0f, true, "rotates whole heads"},
                         Bad{8.0f, false, nullptr}}) {
    test::TinyGguf g("dbrx", 7);
    d::add_vocab(g);
    d::Shape s;
    s.layer_norm = true;
    s.fused_qkv = true;
    s.rope_dims_key = bad.partial_rope;
    s.n_rot = 8;
    s.ffn_norm_name = "attn_output_norm";
    s.experts = true;
    d::add_layers(g, s);
    if (bad.clamp) g.set_f32("attention.clamp_kqv", *bad.clamp);
    g.write();
    if (bad.says == nullptr) {
      EXPECT_EQ(model::Model::load(g.path().string())->hparams().arch, "dbrx");
      continue;
    }
    try {
      model::Model::load(g.path().string());
      ADD_FAILURE() << "loaded a dbrx file that should be refused (" << bad.says << ")";
    } catch (const ModelError& e) {
      EXPECT_NE(std::string(e.what()).find(bad.says), std::string::npos) << e.what();
    }
  }
}

// glm4moe files end with the multi-token-prediction block(s) that GLM-4.5's
// converter writes (nextn_predict_layers of block_count; its usual tensors
// plus blk.N.nextn.*), which plain decoding does not run: a file with such a
// block computes the same logits, bit for bit, as the same weights without
// it. A count that leaves no decoder layer is refused by name.
TEST(TinyFamilies, Glm4moeSkipsItsPredictionBlock) {
  namespace d = test::tiny_family_detail;
  auto write = [](int64_t n_layer, int64_t n_nextn) {
    auto g = std::make_unique<test::TinyGguf>("glm4moe", 32051);
    d::add_vocab(*g);
    d::Shape s;
    s.n_layer = n_layer;
    s.experts = true;
    s.dense_lead = 1;
    s.shexp = true;
    s.probs_bias = true;
    s.qkv_bias = true;
    s.qk_norm = 1;
    s.n_rot = 8;
    s.ffn_norm_name = "post_attention_norm";
    d::add_layers(*g, s);  // the last layer's tensors come last: the others' values do not change
    const std::string p = "blk." + std::to_string(n_layer - 1) + ".nextn.";
    if (n_nextn > 0) {
      g->add_linear(p + "eh_proj.weight", 2 * d::kEmbd, d::kEmbd);
      g->add_norm(p + "enorm.weight", d::kEmbd);
      g->add_norm(p + "hnorm.weight", d::kEmbd);
      g->add_norm(p + "shared_head_norm.weight", d::kEmbd);
    }
    g->set_u32("leading_dense_block_count", 1);
    g->set_u32("expert_shared_count", 1);
    g->set_f32("expert_weights_scale", 2.5f);
    if (n_nextn > 0) g->set_u32("nextn_predict_layers", static_cast<uint32_t>(n_nextn));
    g->write();
    return g;
  };
  const auto plain = write(3, 0);
  const auto with_mtp = write(4, 1);
  const std::vector<int32_t> tokens = test::tiny_family_prompt(1);
  auto a = model::Model::load(plain->path().string());
  auto b = model::Model::load(with_mtp->path().string());
  EXPECT_EQ(b->hparams().n_layer, 3);
  const std::vector<float> la = test::SingleSequence(*a, 64, 2).eval(tokens, 512);
  const std::vector<float> lb = test::SingleSequence(*b, 64, 2).eval(tokens, 512);
  EXPECT_EQ(la, lb);
  const auto none_left = write(2, 2);
  try {
    model::Model::load(none_left->path().string());
    ADD_FAILURE() << "loaded a glm4moe file whose prediction blocks leave no decoder layer";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("nextn_predict_layers"), std::string::npos) << e.what();
  }
}

// ---- The embedding families (tiny_embedding_families(): nomic-bert,
// jina-bert-v2): llama.cpp's hidden states of every token (pooling none)
// and its pooled embedding (the file's mean pooling), dumped by golden_dump
// with an embeddings mode (--embd; outside the repository) into
// tests/model/golden/<family>.p<N>.json as {tokens, states [n][n_embd],
// pooling, pooled [n_embd]}. Each prompt alone and both as two sequences of
// one batch (each attending only within itself, with its own positions);
// tolerance 1e-3 absolute on every value (LayerNorm'ed outputs of order 1;
// both engines f32 throughout, GELU through the f16 table). The quirk:
// every position equal (no relative position, so RoPE and ALiBi drop out)
// must miss the golden.

// Hidden states [sum of lengths, n_embd] of the sequences in one batch (seq
// ids 0, 1, ...), positions 0.. within each, or all 0 with flat_positions.
std::vector<float> encode(const model::Model& m, const std::vector<std::vector<int32_t>>& seqs, bool flat_positions) {
  std::vector<int32_t> tokens, pos, seq;
  for (size_t s = 0; s < seqs.size(); ++s) {
    for (size_t i = 0; i < seqs[s].size(); ++i) {
      tokens.push_back(seqs[s][i]);
      pos.push_back(flat_positions ? 0 : static_cast<int32_t>(i));
      seq.push_back(static_cast<int32_t>(s));
    }
  }
  const int64_t n = static_cast<int64_t>(tokens.size()), n_embd = m.hparams().n_embd;
  std::vector<int32_t> rows(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) rows[static_cast<size_t>(i)] = static_cast<int32_t>(i);
  model::ForwardBatch fb{tokens.data(), pos.data(), n, rows.data(), n, seq.data()};
  cpu::ThreadPool pool(2);
  model::Workspace ws;
  std::vector<float> states(static_cast<size_t>(n * n_embd));
  m.forward(fb, model::KvView{}, pool, ws, states.data());
  return states;
}

// Largest |state - golden| over rows [row0, row0 + golden length) of states.
double worst_state_error(const std::vector<float>& states, int64_t row0, int64_t n_embd, const test::EmbeddingGolden& g) {
  double worst = 0;
  for (size_t i = 0; i < g.states.size(); ++i) {
    EXPECT_EQ(g.states[i].size(), static_cast<size_t>(n_embd));
    for (int64_t d = 0; d < n_embd && d < static_cast<int64_t>(g.states[i].size()); ++d) {
      const float v = states[static_cast<size_t>((row0 + static_cast<int64_t>(i)) * n_embd + d)];
      worst = std::max(worst, std::fabs(v - g.states[i][static_cast<size_t>(d)]));
    }
  }
  return worst;
}

class GoldenEmbeddingFamilies : public ::testing::TestWithParam<Case> {};

TEST_P(GoldenEmbeddingFamilies, StatesAndPooled) {
  const Case& c = GetParam();
  const test::EmbeddingGolden g = test::load_embedding_golden(golden_path(c.family, c.prompt));
  ASSERT_EQ(g.tokens, test::tiny_family_prompt(c.prompt)) << "the golden was made for other tokens";
  ASSERT_EQ(g.states.size(), g.tokens.size());
  const auto tiny = test::make_tiny_embedding_family(c.family);
  auto m = model::Model::load(tiny->path().string());
  ASSERT_EQ(m->hparams().arch, c.family);
  ASSERT_TRUE(m->arch().is_encoder());
  ASSERT_EQ(m->hparams().pooling, model::Pooling::Mean);
  ASSERT_EQ(g.pooling, 1) << "the golden's pooling is not mean";
  const int64_t n_embd = m->hparams().n_embd, n = static_cast<int64_t>(g.tokens.size());

  const std::vector<float> alone = encode(*m, {g.tokens}, false);
  const double err = worst_state_error(alone, 0, n_embd, g);
  EXPECT_LE(err, kAbsTolerance) << c.family << " p" << c.prompt << " alone";
  std::vector<int32_t> rows(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) rows[static_cast<size_t>(i)] = static_cast<int32_t>(i);
  std::vector<float> pooled(static_cast<size_t>(n_embd));
  model::pool_sequence(model::Pooling::Mean, alone.data(), rows.data(), n, n_embd, pooled.data());
  ASSERT_EQ(g.pooled.size(), static_cast<size_t>(n_embd));
  double pooled_err = 0;
  for (int64_t d = 0; d < n_embd; ++d) {
    pooled_err = std::max(pooled_err, std::fabs(pooled[static_cast<size_t>(d)] - g.pooled[static_cast<size_t>(d)]));
  }
  EXPECT_LE(pooled_err, kAbsTolerance) << c.family << " p" << c.prompt << " pooled";

  // After the other prompt in the same batch: its own positions from 0, attending only within itself.
  const std::vector<int32_t> other = test::tiny_family_prompt(3 - c.prompt);
  const std::vector<float> both = encode(*m, {other, g.tokens}, false);
  const double err_both = worst_state_error(both, static_cast<int64_t>(other.size()), n_embd, g);
  EXPECT_LE(err_both, kAbsTolerance) << c.family << " p" << c.prompt << " as the second sequence of a batch";
  std::printf("  %s p%d: max |state error| %.3g alone, %.3g second in a batch; pooled %.3g\n", c.family.c_str(),
              c.prompt, err, err_both, pooled_err);
}

class GoldenEmbeddingQuirks : public ::testing::TestWithParam<Case> {};

TEST_P(GoldenEmbeddingQuirks, PositionsMatter) {
  const Case& c = GetParam();
  const test::EmbeddingGolden g = test::load_embedding_golden(golden_path(c.family, c.prompt));
  const auto tiny = test::make_tiny_embedding_family(c.family);
  auto m = model::Model::load(tiny->path().string());
  const double err = worst_state_error(encode(*m, {g.tokens}, true), 0, m->hparams().n_embd, g);
  EXPECT_GT(err, kQuirkSeen) << c.family << ": the golden does not tell positions apart";
  std::printf("  %s with every position 0: max |state error| %.3g\n", c.family.c_str(), err);
}

std::vector<Case> embedding_cases(std::initializer_list<int> prompts) {
  std::vector<Case> v;
  for (const std::string& f : test::tiny_embedding_families()) {
    for (int p : prompts) v.push_back({f, p});
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(Tiny, GoldenEmbeddingFamilies, ::testing::ValuesIn(embedding_cases({1, 2})), case_name);
INSTANTIATE_TEST_SUITE_P(Tiny, GoldenEmbeddingQuirks, ::testing::ValuesIn(embedding_cases({1})), case_name);

// qwen2vl's rope.dimension_sections: required (as llama.cpp requires it),
// four values, covering at most a head's pairs; a bad file is a ModelError.
TEST(TinyFamilies, Qwen2vlRefusesBadRopeSections) {
  namespace d = test::tiny_family_detail;
  const std::vector<std::vector<int32_t>> bad = {{}, {2, 3, 3}, {4, 4, 4, 0}, {2, -1, 3, 0}};
  for (size_t i = 0; i < bad.size(); ++i) {
    test::TinyGguf g("qwen2vl", 5);
    d::add_vocab(g);
    d::Shape s;
    s.qkv_bias = true;
    d::add_layers(g, s);
    if (!bad[i].empty()) {
      std::vector<gguf::Value> v;
      for (int32_t x : bad[i]) v.push_back(gguf::Value::i32(x));
      g.writer().set("qwen2vl.rope.dimension_sections", gguf::Value::array(gguf::ValueType::INT32, std::move(v)));
    }
    g.write();
    EXPECT_THROW(model::Model::load(g.path().string()), ModelError) << "case " << i;
  }
}

// Writes every family's file into $FERRITE_TINY_OUT (for golden_dump).
TEST(TinyFamilies, DISABLED_Write) {
  const char* out = std::getenv("FERRITE_TINY_OUT");
  ASSERT_NE(out, nullptr) << "set FERRITE_TINY_OUT";
  std::vector<std::string> families = test::tiny_families();
  families.insert(families.end(), test::tiny_ik_families().begin(), test::tiny_ik_families().end());
  for (const std::string& f : families) {
    const auto tiny = test::make_tiny_family(f);
    std::filesystem::copy_file(tiny->path(), std::filesystem::path(out) / ("tiny-" + f + ".gguf"),
                               std::filesystem::copy_options::overwrite_existing);
  }
  for (const std::string& f : test::tiny_embedding_families()) {
    const auto tiny = test::make_tiny_embedding_family(f);
    std::filesystem::copy_file(tiny->path(), std::filesystem::path(out) / ("tiny-" + f + ".gguf"),
                               std::filesystem::copy_options::overwrite_existing);
  }
  for (int p : {1, 2}) {
    std::string ids;
    for (int32_t t : test::tiny_family_prompt(p)) {
      if (!ids.empty()) ids += ',';
      ids += std::to_string(t);
    }
    std::printf("p%d: %s\n", p, ids.c_str());
  }
}

}  // namespace
}  // namespace ferrite
