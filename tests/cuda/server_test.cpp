// The server's engine (continuous batching, several sequences per step) with
// every layer on the GPU: sequences decoded together in one cache give the
// tokens they give alone, and llama.cpp's greedy tokens where a golden exists.
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "device_util.h"
#include "model/golden.h"
#include "runtime/offload.h"
#include "server/engine.h"
#include "server/task.h"
#include "tokenizer/tokenizer.h"

namespace ferrite {
namespace {

using server::Engine;
using server::Event;
using server::GenerationParams;
using server::Task;

struct Loaded {
  std::shared_ptr<const model::Model> model;
  std::shared_ptr<const tokenizer::Tokenizer> tok;
};

Loaded load(const std::filesystem::path& path) {
  Loaded l;
  l.model = model::Model::load(path.string());
  l.tok = std::make_shared<const tokenizer::Tokenizer>(tokenizer::Tokenizer::from_gguf(l.model->file()));
  return l;
}

std::unique_ptr<Engine> gpu_engine(const Loaded& l, int parallel, int64_t n_ctx) {
  server::EngineOptions o;
  o.n_parallel = parallel;
  o.n_ctx = n_ctx;
  o.n_batch = 64;  // prompts are split over several steps, mixed with generation
  o.n_threads = 1;
  o.n_gpu_layers = runtime::kAllLayers;
  return std::make_unique<Engine>(l.model, l.tok, o);
}

std::shared_ptr<Task> greedy_task(std::vector<int32_t> prompt, int n_predict) {
  GenerationParams p;
  p.prompt = std::move(prompt);
  p.sampling.temperature = 0.0f;
  p.n_predict = n_predict;
  p.ignore_eos = true;
  p.n_probs = 0;  // the events then carry the token ids
  return std::make_shared<Task>(std::move(p));
}

// The sampled token ids of a task, once it has ended (fails on an error).
std::vector<int32_t> collect(Task& task) {
  std::vector<int32_t> ids;
  Event ev;
  while (task.next(ev)) {
    for (const server::TokenInfo& t : ev.tokens) ids.push_back(t.id);
    if (ev.final) {
      EXPECT_NE(ev.finish, server::FinishReason::Error) << ev.error;
      break;
    }
  }
  return ids;
}

// Prompts of different lengths (so that sequences occupy the cache unevenly).
std::vector<std::vector<int32_t>> prompts(const tokenizer::Tokenizer& tok, int n) {
  std::vector<std::vector<int32_t>> out;
  for (int i = 0; i < n; ++i) {
    std::string text = "Once upon a time there was a little";
    for (int r = 0; r < i; ++r) text += (r % 2 ? " dog named Tim" : " girl who liked the sun");
    out.push_back(tok.encode(text, true, false));
  }
  return out;
}

// stories260K with the golden prompt in every other slot and other prompts
// between them: each golden slot reproduces llama.cpp's greedy tokens.
TEST(GpuServer, ConcurrentSequencesKeepTheGoldenGreedyTokens) {
  FERRITE_REQUIRE_GPU();
  FERRITE_SHARED_FILE(model_path, "models/stories260K.gguf");
  FERRITE_SHARED_FILE(golden_path, "golden/logits/stories260K.p0.json");
  const test::Golden g = test::load_golden(golden_path);
  constexpr int kSlots = 8, kTokens = 96;
  ASSERT_GE(g.greedy.size(), static_cast<size_t>(kTokens));
  const Loaded l = load(model_path);
  auto engine = gpu_engine(l, kSlots, kSlots * 256);
  const auto others = prompts(*l.tok, kSlots);
  std::vector<std::shared_ptr<Task>> tasks;
  for (int i = 0; i < kSlots; ++i) {
    tasks.push_back(greedy_task(i % 2 == 0 ? g.tokens : others[static_cast<size_t>(i)], kTokens));
    ASSERT_TRUE(engine->submit(tasks.back()));
  }
  const std::vector<int32_t> want(g.greedy.begin(), g.greedy.begin() + kTokens);
  for (int i = 0; i < kSlots; i += 2) EXPECT_EQ(collect(*tasks[static_cast<size_t>(i)]), want) << "slot " << i;
  for (int i = 1; i < kSlots; i += 2) EXPECT_EQ(collect(*tasks[static_cast<size_t>(i)]).size(), size_t{kTokens});
  EXPECT_GE(engine->stats().steps, static_cast<uint64_t>(kTokens));
}

// `slots` sequences of the model at `path` decoded together give the tokens
// each gives alone (the exact product mode).
void expect_together_equal_alone(const std::filesystem::path& path, int slots, int tokens) {
  const Loaded l = load(path);
  const auto ps = prompts(*l.tok, slots);
  std::vector<std::vector<int32_t>> alone;
  {
    auto engine = gpu_engine(l, 1, 512);
    for (const auto& p : ps) {
      auto t = greedy_task(p, tokens);
      ASSERT_TRUE(engine->submit(t));
      alone.push_back(collect(*t));
    }
  }
  auto engine = gpu_engine(l, slots, slots * 128);
  std::vector<std::shared_ptr<Task>> tasks;
  for (const auto& p : ps) {
    tasks.push_back(greedy_task(p, tokens));
    ASSERT_TRUE(engine->submit(tasks.back()));
  }
  for (size_t i = 0; i < ps.size(); ++i) {
    const std::vector<int32_t> got = collect(*tasks[i]);
    ASSERT_EQ(got.size(), static_cast<size_t>(tokens));
    EXPECT_EQ(got, alone[i]) << path << ", sequence " << i;
  }
}

// A quantized model (random weights, Q4_0) in the exact product mode: twelve
// sequences decoded together give the tokens each gives alone.
TEST(GpuServer, ConcurrentSequencesEqualEachAlone) {
  FERRITE_REQUIRE_GPU();
  const cuda::test::ProductMode mode(true);
  FERRITE_SHARED_FILE(model_path, "models/synth/synth-llama-Q4_0.gguf");
  expect_together_equal_alone(model_path, 12, 24);
}

// Expert models (f32 synth: Mixtral-style llama, qwen2moe with its shared
// expert) in the exact product mode: the steps of several sequences go
// through the grouped expert path (tokens gathered per expert), one
// sequence alone through one-token steps; each gives the same tokens.
TEST(GpuServer, MoeConcurrentSequencesEqualEachAlone) {
  FERRITE_REQUIRE_GPU();
  const cuda::test::ProductMode mode(true);
  for (const char* rel : {"models/synth/synth-llama-moe-f32.gguf", "models/synth/synth-qwen2moe-f32.gguf"}) {
    FERRITE_SHARED_FILE(model_path, rel);
    expect_together_equal_alone(model_path, 6, 16);
  }
}

}  // namespace
}  // namespace ferrite
