// The sliding-window KV cache with GPU layers (runtime/kv_cache.h): the GPU
// keeps its sliding layers' K/V in the window's cells (CudaBackend: a second
// cache view, KvView::swa, whose cells the window moves through
// copy_window_cells; the CPU twin of those moves is KvCache::move_cell) and
// its logits stay within the exact-mode bound of the CPU context that keeps
// the same window, over two prompts and generations many windows long in one
// cache, a copied sequence, a re-evaluated range, speculative rows-as-steps
// drafts, partial offload and the cache types; in the fast mode (tiled,
// decode and rows-as-steps kernels) within its bound of the GPU's whole cache
// (--swa-full), with rows as steps the bits of one-token steps; saved
// sequences go between GPU and CPU contexts. --fit counts the window's cells
// for the sliding layers.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "cuda/backend.h"
#include "cuda/backend/cuda_backend.h"
#include "device_util.h"
#include "gguf/file.h"
#include "gguf/writer.h"
#include "model/model.h"
#include "model/ref_gemma.h"
#include "runtime/context.h"
#include "runtime/offload.h"
#include "support/logits.h"

namespace ferrite {
namespace {

using test::max_abs_diff;
using test::random_tokens;

constexpr int64_t kWindow = 24;   // the exact cases' sliding window
constexpr int64_t kCtx = 1024;    // their whole cache's cells; the window cache gets 256
// tests/cuda/ref_archs_test.cpp's exact-mode bound for a deep gemma3.
constexpr double kExactTol = 5e-3;
// tests/cuda/kv_cache_test.cpp's bounds: GPU attention over a bf16 cache
// against the CPU's (AttentionOverFloatCaches: the two read bf16 rows
// differently, the GPU's whole cache as much as its window), and the fast
// mode's logits (kFastMaxTol).
constexpr double kBf16Tol = 1.6e-2;
constexpr double kFastTol = 8e-2;

struct Case {
  TensorType type;
  int ngl;          // GPU layers (runtime::kAllLayers: all)
  int64_t n_batch;
  bool exact;       // exact products and attention (cuda::exact_products)
};

std::string case_name(const Case& c) {
  return tensor_type_name(c.type) + "_ngl" + (c.ngl < 0 ? std::string("all") : std::to_string(c.ngl)) + "_b" +
         std::to_string(c.n_batch) + (c.exact ? "_exact" : "_fast");
}

int32_t argmax(std::span<const float> l) {
  return static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin());
}

// The lengths of a case: the model's window and context, the two prompts.
// The exact cases (against the CPU) are small; the fast ones have the fast
// kernels' head size (64) and a window whose visible cells (512 and more)
// the decode kernel splits.
struct Shape {
  int64_t n_swa, n_ctx, head_dim, n_head, prompt_a, prompt_d;
};
constexpr Shape kExactShape{kWindow, kCtx, 16, 8, 400, 300};
constexpr Shape kFastShape{600, 4096, 64, 4, 2000, 1100};

class GpuKvWindow : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
    test::GemmaConfig c;
    c.version = 3;
    c.n_layer = 6;  // layers 0-4 slide, layer 5 is global
    c.n_embd = 64;
    c.n_head = shape().n_head;
    c.n_head_kv = 2;  // K/V rows of multiples of 32 values: the quantized caches apply
    c.head_dim = shape().head_dim;
    c.n_ff = 96;
    c.n_swa = shape().n_swa;
    c.freq_base = 1000000.0;
    c.n_ctx = shape().n_ctx;
    tiny_ = std::make_unique<test::TinyGemma>(c);
    model_ = model::Model::load(tiny_->path().string());
  }
  static const Shape& shape() { return GetParam().exact ? kExactShape : kFastShape; }
  runtime::ContextParams params(int ngl, bool swa_full = false) const {
    const Case& c = GetParam();
    return {.n_ctx = shape().n_ctx, .n_batch = c.n_batch, .n_threads = 2, .cache_type = c.type, .cache_type_v = c.type,
            .n_gpu_layers = ngl, .swa_full = swa_full, .n_seq_max = 2};
  }
  // The bound of a GPU context against the CPU window in the exact mode
  // (the fast mode compares the GPU's window with its whole cache only:
  // its products are not the CPU's).
  double cpu_tolerance() const { return GetParam().type == TensorType::BF16 ? kBf16Tol : kExactTol; }
  // Every context decodes b; for each pair (i, j) the largest difference of
  // ctx[i]'s logits from ctx[j]'s goes into its worst.
  struct Pair {
    size_t i, j;
    const char* what;
    double tol;
    double worst = 0;
  };
  static void decode_all(const std::vector<runtime::Context*>& ctx, const runtime::Batch& b, std::vector<Pair>& pairs) {
    for (runtime::Context* c : ctx) c->decode(b);
    for (Pair& p : pairs) {
      ASSERT_EQ(ctx[p.i]->n_outputs(), ctx[p.j]->n_outputs());
      for (int64_t o = 0; o < ctx[p.j]->n_outputs(); ++o) {
        p.worst = std::max(p.worst, max_abs_diff(ctx[p.i]->logits(o), ctx[p.j]->logits(o)));
      }
    }
  }
  // A copy of the model with its matrices in `type` (the CPU's quantizer):
  // quantized weights are what rows as steps promises bits for.
  std::shared_ptr<const model::Model> quantized_model(TensorType type) {
    const gguf::File f = gguf::File::open(tiny_->path().string());
    gguf::Writer w;
    w.copy_metadata(f);
    auto quantize = [&](const gguf::TensorInfo& t) {
      return t.n_dims == 2 && t.name != "token_embd.weight" && t.ne[0] % 32 == 0;
    };
    for (const gguf::TensorInfo& t : f.tensors()) {
      w.add_tensor(t.name, quantize(t) ? type : t.type, std::vector<int64_t>(t.ne.begin(), t.ne.begin() + t.n_dims));
    }
    quantized_path_ = tiny_->path().string() + "." + tensor_type_name(type) + ".gguf";
    w.open(quantized_path_);
    for (const gguf::TensorInfo& t : f.tensors()) {
      if (!quantize(t)) {
        w.write_tensor_data(t.data, t.n_bytes);
        continue;
      }
      std::vector<float> x(static_cast<size_t>(t.n_elements));
      std::memcpy(x.data(), t.data, x.size() * sizeof(float));
      const std::vector<uint8_t> q = cuda::test::quantize_rows(type, x, t.ne[1], t.ne[0]);
      w.write_tensor_data(q.data(), q.size());
    }
    w.close();
    return model::Model::load(quantized_path_);
  }
  void TearDown() override {
    if (!quantized_path_.empty()) std::filesystem::remove(quantized_path_);
  }
  std::string quantized_path_;
  std::unique_ptr<test::TinyGemma> tiny_;
  std::shared_ptr<const model::Model> model_;
};

TEST_P(GpuKvWindow, GpuLayersKeepTheWindowAndMatch) {
  const Case& c = GetParam();
  const cuda::test::ProductMode mode(c.exact);
  runtime::Context cpu(model_, params(0)), gpu(model_, params(c.ngl)), gpu_full(model_, params(c.ngl, true));
  ASSERT_NE(cpu.cache().window(), nullptr);
  ASSERT_NE(gpu.cache().window(), nullptr);
  EXPECT_EQ(gpu.cache().window()->size(), cpu.cache().window()->size());
  EXPECT_EQ(gpu_full.cache().window(), nullptr);
  // The GPU's window against its whole cache (--swa-full), and in the exact
  // mode both against the CPU window.
  std::vector<runtime::Context*> ctx = {&gpu, &gpu_full};
  const double tol = c.exact ? kExactTol : kFastTol;
  std::vector<Pair> worst = {{0, 1, "GPU window - GPU whole cache", tol}};
  if (c.exact) {
    ctx.push_back(&cpu);
    worst.push_back({0, 2, "GPU window - CPU window", cpu_tolerance()});
    worst.push_back({1, 2, "GPU whole cache - CPU window", cpu_tolerance()});
  }
  const int64_t n_vocab = model_->hparams().n_vocab;

  // Two prompts of several windows, interleaved 16 tokens each per batch.
  const std::vector<int32_t> a = random_tokens(shape().prompt_a, n_vocab, 11);
  const std::vector<int32_t> d = random_tokens(shape().prompt_d, n_vocab, 12);
  runtime::Batch b;
  for (size_t i = 0; i < a.size(); i += 16) {
    b.clear();
    for (size_t j = i; j < std::min(a.size(), i + 16); ++j) b.add(a[j], static_cast<int32_t>(j), 0, true);
    for (size_t j = i; j < std::min(d.size(), i + 16); ++j) b.add(d[j], static_cast<int32_t>(j), 1, true);
    ASSERT_NO_FATAL_FAILURE(decode_all(ctx, b, worst));
  }
  // Greedy generation of both, one token each a step.
  auto pa = static_cast<int32_t>(a.size()), pd = static_cast<int32_t>(d.size());
  int32_t na = argmax(ctx[0]->logits(ctx[0]->n_outputs() - 1)), nd = a[0];
  for (int step = 0; step < 60; ++step) {
    b.clear();
    b.add(na, pa++, 0, true);
    b.add(nd, pd++, 1, true);
    ASSERT_NO_FATAL_FAILURE(decode_all(ctx, b, worst));
    na = argmax(ctx[0]->logits(0));
    nd = argmax(ctx[0]->logits(1));
  }
  // Sequence 1 ends; sequence 0's last 1.5 windows are copied into
  // sequence 1 (copy_cached_cells, copy_window_cells), and both go on.
  const auto from = static_cast<int32_t>(pa - 3 * shape().n_swa / 2);
  for (runtime::Context* x : ctx) {
    x->remove_range(1, 0, -1);
    ASSERT_EQ(x->copy_range(0, 1, from, pa), pa - from);
  }
  int32_t n1 = na;
  for (int step = 0; step < 30; ++step) {
    b.clear();
    b.add(na, pa, 0, true);
    b.add(n1, pa, 1, true);
    ++pa;
    ASSERT_NO_FATAL_FAILURE(decode_all(ctx, b, worst));
    na = argmax(ctx[0]->logits(0));
    n1 = argmax(ctx[0]->logits(1));
  }
  // A batch of 8 for sequence 0, its last 6 positions removed and evaluated
  // again with other tokens (the window still reaches back that far).
  b.clear();
  for (int i = 0; i < 8; ++i) b.add(a[static_cast<size_t>(100 + i)], pa + i, 0, true);
  ASSERT_NO_FATAL_FAILURE(decode_all(ctx, b, worst));
  pa += 2;
  for (runtime::Context* x : ctx) x->remove_range(0, pa, -1);
  b.clear();
  for (int i = 0; i < 6; ++i) b.add(d[static_cast<size_t>(i)], pa + i, 0, true);
  ASSERT_NO_FATAL_FAILURE(decode_all(ctx, b, worst));
  pa += 6;
  // Speculative drafts of 8 as rows of one-token steps, the last 4 rejected.
  for (int round = 0; round < 3; ++round) {
    const std::vector<int32_t> draft = random_tokens(8, n_vocab, 100 + static_cast<uint32_t>(round));
    b.clear();
    b.rows_as_steps = true;
    for (size_t i = 0; i < draft.size(); ++i) b.add(draft[i], pa + static_cast<int32_t>(i), 0, true);
    ASSERT_NO_FATAL_FAILURE(decode_all(ctx, b, worst));
    pa += 4;
    for (runtime::Context* x : ctx) x->remove_range(0, pa, -1);
  }
  for (const Pair& p : worst) {
    EXPECT_LE(p.worst, p.tol) << p.what;
    std::printf("  %s: max |%s| %.3g\n", case_name(c).c_str(), p.what, p.worst);
  }
}

// Speculative verification's promise (Batch::rows_as_steps) over the
// window: a draft's rows are the logits of the tokens' one-token steps, bit
// for bit, with quantized weights on the fast kernels; the whole cache's
// (--swa-full) as well.
TEST_P(GpuKvWindow, RowsAsStepsAreOneTokenSteps) {
  const Case& c = GetParam();
  if (c.exact) GTEST_SKIP() << "the exact mode evaluates rows as a batch (one kernel for every token)";
  const cuda::test::ProductMode mode(false);
  model_ = quantized_model(TensorType::Q8_0);
  const auto nv = static_cast<size_t>(model_->hparams().n_vocab);
  for (bool swa_full : {false, true}) {
    // Two contexts at the same state: one verifies drafts as rows of
    // one-token steps, the other evaluates the tokens one at a time.
    runtime::Context rows(model_, params(c.ngl, swa_full)), steps(model_, params(c.ngl, swa_full));
    ASSERT_EQ(rows.cache().window() == nullptr, swa_full);
    const std::vector<int32_t> prompt = random_tokens(shape().prompt_a, static_cast<int64_t>(nv), 31);
    rows.eval(prompt, 0);
    steps.eval(prompt, 0);
    size_t differ = 0, n = 0;
    double largest = 0;
    for (int round = 0; round < 4; ++round) {
      const std::vector<int32_t> draft =
          random_tokens(6 + 4 * round, static_cast<int64_t>(nv), 40 + static_cast<uint32_t>(round));
      const std::span<const float> got = rows.eval(draft, 0, true, true);
      const std::vector<float> all(got.begin(), got.end());
      for (size_t i = 0; i < draft.size(); ++i) {
        const std::span<const float> want = steps.eval({&draft[i], 1}, 0);
        for (size_t v = 0; v < nv; ++v, ++n) {
          if (std::memcmp(&all[i * nv + v], &want[v], sizeof(float)) == 0) continue;
          ++differ;
          largest = std::max(largest, std::fabs(double{all[i * nv + v]} - want[v]));
        }
      }
    }
    const char* what = swa_full ? "whole cache" : "window";
    EXPECT_EQ(differ, 0u) << what << ": largest difference " << largest;
    std::printf("  %s, %s: rows as steps, %zu of %zu logits differ from the steps' (largest %.3g)\n",
                case_name(c).c_str(), what, differ, n, largest);
  }
}

// Saved sequences (context_state.h, version 2: the sliding layers' window
// rows) from and into GPU layers (read_cached_rows, write_cached_rows): a
// GPU window context's file loads into a fresh GPU context and into a CPU
// one, a CPU window context's into a GPU one, and a whole cache's (--swa-full)
// into a GPU window; each goes on within the bound of the CPU window that
// never stopped.
TEST_P(GpuKvWindow, SaveLoadRoundTrip) {
  const Case& c = GetParam();
  if (!c.exact) GTEST_SKIP() << "the exact cases compare against the CPU";
  const cuda::test::ProductMode mode(true);
  const int64_t n_vocab = model_->hparams().n_vocab;
  runtime::Context cpu(model_, params(0)), gpu(model_, params(c.ngl)), gpu_full(model_, params(c.ngl, true));
  const std::vector<int32_t> prompt = random_tokens(shape().prompt_a, n_vocab, 21);
  for (runtime::Context* x : {&cpu, &gpu, &gpu_full}) x->eval(prompt, 0);
  const std::string gpu_state = gpu.save_sequence_bytes(0, prompt);
  const std::string cpu_state = cpu.save_sequence_bytes(0, prompt);
  const std::string full_state = gpu_full.save_sequence_bytes(0, prompt);
  EXPECT_EQ(gpu_state.size(), cpu_state.size());
  EXPECT_LT(gpu_state.size(), full_state.size());  // the sliding layers' window only

  runtime::Context gpu2(model_, params(c.ngl)), gpu3(model_, params(c.ngl)), gpu4(model_, params(c.ngl)),
      cpu2(model_, params(0));
  EXPECT_EQ(gpu2.load_sequence_bytes(0, gpu_state), prompt);
  EXPECT_EQ(cpu2.load_sequence_bytes(0, gpu_state), prompt);
  EXPECT_EQ(gpu3.load_sequence_bytes(0, cpu_state), prompt);
  EXPECT_EQ(gpu4.load_sequence_bytes(0, full_state), prompt);
  const std::vector<int32_t> more = random_tokens(40, n_vocab, 22);
  const std::span<const float> ref = cpu.eval(more, 0, true);
  const std::vector<float> want(ref.begin(), ref.end());
  const char* names[] = {"GPU (its own state)", "GPU from GPU", "CPU from GPU", "GPU from CPU", "GPU from whole cache"};
  runtime::Context* ctx[] = {&gpu, &gpu2, &cpu2, &gpu3, &gpu4};
  for (size_t i = 0; i < std::size(ctx); ++i) {
    const std::span<const float> got = ctx[i]->eval(more, 0, true);
    const double d = max_abs_diff(got, want);
    EXPECT_LE(d, cpu_tolerance()) << names[i];
    std::printf("  %s: save/load, max |%s - CPU window| %.3g\n", case_name(c).c_str(), names[i], d);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, GpuKvWindow,
                         ::testing::Values(Case{TensorType::F16, runtime::kAllLayers, 40, true},
                                           Case{TensorType::F16, 2, 16, true},
                                           Case{TensorType::Q8_0, runtime::kAllLayers, 16, true},
                                           Case{TensorType::F32, 4, 40, true},
                                           Case{TensorType::BF16, runtime::kAllLayers, 16, true},
                                           Case{TensorType::F16, runtime::kAllLayers, 40, false},
                                           Case{TensorType::Q8_0, 3, 16, false}),
                         [](const auto& info) { return case_name(info.param); });

// --fit's report counts the window's cells for the sliding layers.
TEST(GpuKvWindowFit, SlidingLayersCountTheWindow) {
  FERRITE_REQUIRE_GPU();
  test::GemmaConfig c;
  c.version = 3;
  c.n_layer = 6;
  c.n_embd = 64;
  c.n_head = 8;
  c.n_head_kv = 2;
  c.head_dim = 16;
  c.n_ff = 96;
  c.n_swa = kWindow;
  c.n_ctx = kCtx;
  test::TinyGemma tiny(c);
  auto model = model::Model::load(tiny.path().string());
  const model::HParams& hp = model->hparams();
  std::vector<bool> sliding(static_cast<size_t>(hp.n_layer));
  for (int64_t il = 0; il < hp.n_layer; ++il) sliding[static_cast<size_t>(il)] = hp.is_swa(il);
  const cuda::FitReport whole = cuda::fit_report(model->file(), model->dims(), kCtx);
  const cuda::FitReport win = cuda::fit_report(model->file(), model->dims(), kCtx, 0, TensorType::F16,
                                               TensorType::F16, 256, sliding);
  const uint64_t row = 2 * 2 * static_cast<uint64_t>(hp.n_embd_kv());  // f16 K and V
  for (size_t il = 0; il < sliding.size(); ++il) {
    const uint64_t saved = sliding[il] ? (kCtx - 256) * row : 0;
    EXPECT_EQ(whole.layer_bytes[il] - win.layer_bytes[il], saved) << "layer " << il;
  }
  // The context's rule: a window of 256 cells for one sequence and batches of 40.
  EXPECT_EQ(runtime::window_cells(hp, {.n_ctx = kCtx, .n_batch = 40}), 256);
  EXPECT_EQ(runtime::window_cells(hp, {.n_ctx = kCtx, .n_batch = 40, .swa_full = true}), 0);
  const runtime::GpuFit f = runtime::fit_gpu_layers(*model, {.n_ctx = kCtx, .n_batch = 40});
  EXPECT_NE(f.report.find("256 in sliding-window layers"), std::string::npos) << f.report;
}

// With several sequences (the server's slots) the window holds each one's:
// --fit counts the cache a context of that many sequences allocates, on the
// CPU (runtime::cache_plan, the context's window) and on the GPU (the
// backend's K/V buffers against the report's cache bytes), f16 and q8_0.
TEST(GpuKvWindowFit, CountsEverySequencesWindow) {
  FERRITE_REQUIRE_GPU();
  test::GemmaConfig c;
  c.version = 3;
  c.n_layer = 6;
  c.n_embd = 64;
  c.n_head = 8;
  c.n_head_kv = 2;
  c.head_dim = 16;
  c.n_ff = 96;
  c.n_swa = kWindow;
  c.n_ctx = kCtx;
  test::TinyGemma tiny(c);
  auto model = model::Model::load(tiny.path().string());
  const model::HParams& hp = model->hparams();
  std::vector<bool> sliding(static_cast<size_t>(hp.n_layer));
  for (int64_t il = 0; il < hp.n_layer; ++il) sliding[static_cast<size_t>(il)] = hp.is_swa(il);
  for (TensorType type : {TensorType::F16, TensorType::Q8_0}) {
    for (int n_seq : {1, 12}) {  // windows of 256 and 512 cells (12 x 24 + 40, padded)
      const std::string what = tensor_type_name(type) + ", " + std::to_string(n_seq) + " sequences";
      runtime::ContextParams p{.n_ctx = kCtx, .n_batch = 40, .n_threads = 2, .cache_type = type,
                               .cache_type_v = type, .n_seq_max = n_seq};
      const runtime::CachePlan plan = runtime::cache_plan(hp, p);
      EXPECT_EQ(plan.window_cells, n_seq == 1 ? 256 : 512) << what;
      const runtime::GpuFit f = runtime::fit_gpu_layers(*model, p);
      EXPECT_NE(f.report.find(std::to_string(plan.window_cells) + " in sliding-window layers"), std::string::npos)
          << what << ": " << f.report;
      // The context with every layer on the GPU keeps that window (its GPU backend as many cells).
      p.n_gpu_layers = runtime::kAllLayers;
      runtime::Context ctx(model, p);
      ASSERT_NE(ctx.cache().window(), nullptr) << what;
      EXPECT_EQ(ctx.cache().window()->size(), plan.window_cells) << what;
      // The GPU's K/V buffers for that window against the report's cache bytes.
      const cuda::FitReport r = cuda::fit_report(model->file(), model->dims(), plan.n_cells, 0, type, type,
                                                 plan.window_cells, sliding);
      uint64_t counted = 0;
      for (uint64_t b : r.cache_bytes) counted += b;
      runtime::Offload off = runtime::make_offload(*model, plan.n_cells, runtime::kAllLayers, type, type,
                                                   backend::env_switches(), plan.window_cells);
      const auto* gpu = dynamic_cast<const cuda::CudaBackend*>(off.backend.get());
      ASSERT_NE(gpu, nullptr);
      EXPECT_EQ(gpu->cache_bytes(), counted) << what;
      std::printf("  %s: window %lld cells, GPU K/V %llu bytes (counted %llu)\n", what.c_str(),
                  static_cast<long long>(plan.window_cells), static_cast<unsigned long long>(gpu->cache_bytes()),
                  static_cast<unsigned long long>(counted));
    }
  }
}

}  // namespace
}  // namespace ferrite
