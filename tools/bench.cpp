// `ferrite bench MODEL [-p 512] [-n 128] [-t N] [-r 5] [--depth D] [--isa L] [-o md|json|csv]`:
// prompt processing (ppP: P random tokens in one batch) and generation
// (tgN: N tokens one at a time) speed, as llama-bench measures them, with
// the fraction of the hardware limit reached: tg against the weight bytes
// read per token over the measured read bandwidth, pp against the matrix
// operations per token over the measured peak of the instruction class the
// model's main matrix type runs on (src/cpu/hw_limits.h); with every layer
// on the GPU (-ngl all), of the GPU's memory bandwidth and tensor peak.
// Lists are comma-separated (-p 128,512) or repeated (-m a.gguf -m b.gguf).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench_report.h"
#include "command.h"
#include "core/error.h"
#include "cpu/features.h"
#include "cpu/hw_limits.h"
#include "gguf/metadata.h"
#include "model/model.h"
#include "quant/mix.h"
#include "model_options.h"
#include "model_path.h"
#include "runtime/context.h"
#include "runtime/kv_cache.h"
#include "runtime/offload.h"

namespace ferrite::tools {
namespace {

struct BenchOptions {
  std::vector<std::string> models;
  std::vector<int> n_prompt{512};
  std::vector<int> n_gen{128};
  std::vector<int> threads;
  std::vector<int> depth{0};
  int repetitions = 5;
  int n_batch = 512;
  std::string ngl = "0";  // layers on the GPU: a number or "all"
  int n_gpu_layers = 0;   // parsed from ngl
  std::string cache_type_k = "f16", cache_type_v = "f16";
  std::vector<int> flash_attn{0};  // llama-bench's -fa 0|1: accepted, one attention path here
  std::vector<int> mmap{1};        // llama-bench's -mmp 0|1: accepted, the file is always mapped
  std::string output = "md";
  size_t probe_mib = 0;  // bandwidth probe buffer (0: sized from the LLC)
  std::string isa;       // dispatch cap (empty: FERRITE_ISA or the host's)
  ModelOptions lora;     // --lora, --lora-scaled (every test runs with the adapters applied)
};

// Context cells beyond the tokens of a test (the cache rounds its size).
constexpr int64_t kCtxSlack = 16;
constexpr uint32_t kTokenSeed = 1234;
constexpr double kGiga = 1e9;
constexpr double kMega = 1e6;
constexpr double kKilo = 1e3;

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

BenchFormat parse_format(const std::string& s) {
  if (s == "md") return BenchFormat::Markdown;
  if (s == "json") return BenchFormat::Json;
  if (s == "csv") return BenchFormat::Csv;
  throw InvalidArgument("-o: unknown output format '" + s + "' (md, json or csv)");
}

void check_options(const BenchOptions& o) {
  if (o.models.empty()) throw InvalidArgument("give at least one model with -m");
  for (int v : o.n_prompt) {
    if (v < 0) throw InvalidArgument("-p must not be negative");
  }
  for (int v : o.n_gen) {
    if (v < 0) throw InvalidArgument("-n must not be negative");
  }
  for (int v : o.depth) {
    if (v < 0) throw InvalidArgument("--depth must not be negative");
  }
  for (int v : o.threads) {
    if (v < 1) throw InvalidArgument("-t: thread counts must be at least 1");
  }
  if (o.repetitions < 1) throw InvalidArgument("-r must be at least 1");
  if (o.n_batch < 1) throw InvalidArgument("-b must be at least 1");
}

// Name, sizes and per-token costs of a loaded model.
BenchModel describe(const std::string& path, const model::Model& m) {
  const gguf::File& f = m.file();
  const gguf::Metadata md(f);
  const model::HParams& hp = m.hparams();
  BenchModel b;
  b.path = path;
  const bool tied = f.find_tensor("output.weight") == nullptr;
  std::map<TensorType, uint64_t> matrix_bytes;
  for (const gguf::TensorInfo& t : f.tensors()) {
    b.size_bytes += t.n_bytes;
    b.n_params += t.n_elements;
    const bool embedding = t.name == "token_embd.weight";
    if (embedding && !tied) continue;  // one row per token: negligible
    // Of the experts only the used ones are read.
    const bool experts = t.name.find("_exps") != std::string::npos && hp.n_expert > 0;
    const uint64_t bytes = experts ? t.n_bytes * static_cast<uint64_t>(hp.n_expert_used) / hp.n_expert : t.n_bytes;
    const uint64_t elems =
        experts ? t.n_elements * static_cast<uint64_t>(hp.n_expert_used) / hp.n_expert : t.n_elements;
    b.bytes_per_token += bytes;
    if (t.n_dims >= 2) {
      b.flops_per_token += 2 * elems;
      matrix_bytes[t.type] += bytes;
    }
  }
  TensorType main_type = TensorType::F32;
  uint64_t most = 0;
  for (const auto& [type, bytes] : matrix_bytes) {
    if (bytes > most) most = bytes, main_type = type;
  }
  b.peak_kind = cpu::peak_kind_name(cpu::peak_kind_for(main_type));
  b.main_type = main_type;
  // "llama 1B Q4_0": architecture, parameter count, preset (or main type).
  std::string type_name = tensor_type_name(main_type);
  if (const auto ft = md.opt_uint("general.file_type")) {
    for (const quant::Preset& p : quant::presets()) {
      if (p.file_type == *ft) type_name = p.name;
    }
  }
  const double params = static_cast<double>(b.n_params);
  const auto rounded = [&](double unit) { return std::to_string(static_cast<int64_t>(params / unit + 0.5)); };
  const std::string size_label = params >= kGiga  ? rounded(kGiga) + "B"
                                 : params >= kMega ? rounded(kMega) + "M"
                                                   : rounded(kKilo) + "K";
  b.name = hp.arch + " " + size_label + " " + type_name;
  return b;
}

std::vector<int32_t> random_tokens(int64_t n, int64_t n_vocab, std::mt19937& rng) {
  std::uniform_int_distribution<int32_t> dist(0, static_cast<int32_t>(n_vocab - 1));
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (auto& t : v) t = dist(rng);
  return v;
}

// One repetition: a fresh cache, `depth` tokens prefilled (untimed), then
// the timed test. Returns tokens per second.
double run_once(runtime::Context& ctx, int n_prompt, int n_gen, int depth, std::mt19937& rng) {
  ctx.clear();
  if (depth > 0) ctx.eval(random_tokens(depth, ctx.n_vocab(), rng));
  if (n_prompt > 0) {
    const std::vector<int32_t> toks = random_tokens(n_prompt, ctx.n_vocab(), rng);
    const auto t0 = Clock::now();
    ctx.eval(toks);
    return n_prompt / seconds_since(t0);
  }
  const std::vector<int32_t> toks = random_tokens(n_gen, ctx.n_vocab(), rng);
  const auto t0 = Clock::now();
  for (int32_t t : toks) ctx.eval(std::span<const int32_t>(&t, 1));
  return n_gen / seconds_since(t0);
}

void warm_up(runtime::Context& ctx, int n_prompt, std::mt19937& rng) {
  ctx.clear();
  ctx.eval(random_tokens(n_prompt > 0 ? n_prompt : 1, ctx.n_vocab(), rng));
}

void print_limits(const cpu::HwLimits& h, BenchFormat fmt) {
  char line[256];
  std::snprintf(line, sizeof(line),
                "hardware (%d threads, isa %s): read %.1f GB/s, clock %.2f GHz, peak f32-fma %.0f / bf16-dot %.0f / "
                "int8-dot %.0f Gop/s\n",
                h.threads, cpu::isa_summary().c_str(), h.read_bytes_per_s / kGiga, h.clock_hz / kGiga,
                h.peak_ops_per_s(cpu::PeakKind::F32Fma) / kGiga, h.peak_ops_per_s(cpu::PeakKind::Bf16Dot) / kGiga,
                h.peak_ops_per_s(cpu::PeakKind::Int8Dot) / kGiga);
  // The table formats keep stdout parseable: the probe goes to stderr there.
  std::fputs(line, fmt == BenchFormat::Markdown ? stdout : stderr);
}

cpu::PeakKind peak_kind_from_name(const std::string& s) {
  for (cpu::PeakKind k : {cpu::PeakKind::F32Fma, cpu::PeakKind::Bf16Dot, cpu::PeakKind::Int8Dot}) {
    if (cpu::peak_kind_name(k) == s) return k;
  }
  return cpu::PeakKind::F32Fma;
}

void print_gpu_limits(const runtime::GpuLimits& g, BenchFormat fmt) {
  char line[256];
  std::snprintf(line, sizeof(line), "GPU (%s): memory %.2f TB/s, peak %s %.0f Top/s (from its attributes)\n",
                g.name.c_str(), g.read_bytes_per_s / 1e12, g.peak_kind.c_str(), g.peak_ops_per_s / 1e12);
  std::fputs(line, fmt == BenchFormat::Markdown ? stdout : stderr);
}

int run_bench(BenchOptions& opt) {
  opt.n_gpu_layers = opt.ngl == "all" ? runtime::kAllLayers : 0;
  if (opt.ngl != "all") {
    size_t used = 0;
    try {
      opt.n_gpu_layers = std::stoi(opt.ngl, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != opt.ngl.size() || opt.n_gpu_layers < 0) {
      throw InvalidArgument("-ngl takes a number of layers or 'all', not '" + opt.ngl + "'");
    }
  }
  check_options(opt);
  const BenchFormat fmt = parse_format(opt.output);
  // Before the models load: their repacking depends on the level.
  if (!opt.isa.empty()) cpu::set_isa_cap(cpu::parse_isa_cap(opt.isa));
  if (opt.threads.empty()) opt.threads.push_back(cpu::ThreadPool::default_threads());

  std::map<int, cpu::HwLimits> limits;
  for (int t : opt.threads) {
    if (limits.count(t) != 0) continue;
    cpu::ThreadPool pool(t);
    limits[t] = cpu::measure_hw_limits(pool, opt.probe_mib << 20);
    print_limits(limits[t], fmt);
  }
  if (fmt == BenchFormat::Markdown) std::fputs(("\n" + markdown_header()).c_str(), stdout);
  if (fmt == BenchFormat::Csv) std::fputs(csv_header().c_str(), stdout);
  std::fflush(stdout);

  std::vector<std::unique_ptr<BenchModel>> described;
  std::vector<BenchRow> rows;
  std::mt19937 rng(kTokenSeed);
  const TensorType type_k = runtime::cache_type_from_name(opt.cache_type_k, "--cache-type-k");
  const TensorType type_v = runtime::cache_type_from_name(opt.cache_type_v, "--cache-type-v");
  int ngl = opt.n_gpu_layers;
  if (ngl != 0 && !runtime::gpu_offload_available()) {
    std::fprintf(stderr, "ferrite: warning: -ngl ignored: this build has no GPU backend; running on the CPU\n");
    ngl = 0;
  }
  for (const std::string& name : opt.models) {
    const std::string path = resolve_model_argument(name);
    std::shared_ptr<const model::Model> m = model::Model::load(path);
    runtime::ContextParams with_lora;
    load_lora(opt.lora, *m, with_lora);
    described.push_back(std::make_unique<BenchModel>(describe(path, *m)));
    const BenchModel* bm = described.back().get();
    // Every layer on the GPU: the fraction is of the GPU's limits (a partial
    // offload runs on both: no single limit).
    const bool whole_gpu = ngl == runtime::kAllLayers || (ngl > 0 && ngl >= m->hparams().n_layer);
    runtime::GpuLimits gpu;
    if (whole_gpu) {
      gpu = runtime::gpu_limits(bm->main_type);
      print_gpu_limits(gpu, fmt);
    }
    // Tests: every pp, then every tg, each at every depth (llama-bench's order).
    std::vector<std::pair<int, int>> tests;
    for (int p : opt.n_prompt) {
      if (p > 0) tests.emplace_back(p, 0);
    }
    for (int n : opt.n_gen) {
      if (n > 0) tests.emplace_back(0, n);
    }
    for (int t : opt.threads) {
      for (int d : opt.depth) {
        for (const auto& [p, n] : tests) {
          runtime::Context ctx(m, {.n_ctx = d + std::max(p, n) + kCtxSlack,
                                   .n_batch = opt.n_batch,
                                   .n_threads = t,
                                   .cache_type = type_k,
                                   .cache_type_v = type_v,
                                   .n_gpu_layers = ngl,
                                   .lora = with_lora.lora,
                                   .lora_scales = with_lora.lora_scales});
          BenchRow row;
          row.model = bm;
          row.backend = ctx.backend_name();
          row.ngl = ngl == 0 ? "0" : opt.ngl;
          row.threads = t;
          row.n_prompt = p;
          row.n_gen = n;
          row.n_depth = d;
          if (whole_gpu) {
            row.read_bytes_per_s = gpu.read_bytes_per_s;
            row.peak_ops_per_s = gpu.peak_ops_per_s;
          } else if (ngl == 0) {
            row.read_bytes_per_s = limits[t].read_bytes_per_s;
            row.peak_ops_per_s = limits[t].peak_ops_per_s(peak_kind_from_name(bm->peak_kind));
          }
          warm_up(ctx, p, rng);
          for (int r = 0; r < opt.repetitions; ++r) row.samples_ts.push_back(run_once(ctx, p, n, d, rng));
          if (fmt == BenchFormat::Markdown) std::fputs(markdown_row(row).c_str(), stdout);
          if (fmt == BenchFormat::Csv) std::fputs(csv_row(row).c_str(), stdout);
          std::fflush(stdout);
          rows.push_back(std::move(row));
        }
      }
    }
  }
  if (fmt == BenchFormat::Json) std::fputs(json_rows(rows).c_str(), stdout);
  return 0;
}

const CommandRegistrar kBench({"bench", "Measure prompt and generation speed (llama-bench's tests)",
                               [](CLI::App& sub) -> std::function<int()> {
                                 auto opt = std::make_shared<BenchOptions>();
                                 sub.add_option("-m,--model,model", opt->models,
                                                "Model files or names, repeatable or a comma list (also as arguments)")
                                     ->required()
                                     ->delimiter(',');
                                 sub.add_option("-p,--n-prompt", opt->n_prompt, "Prompt lengths (0: no pp test)")
                                     ->delimiter(',');
                                 sub.add_option("-n,--n-gen", opt->n_gen, "Generated tokens (0: no tg test)")
                                     ->delimiter(',');
                                 sub.add_option("-t,--threads", opt->threads, "Thread counts (default: all CPUs)")
                                     ->delimiter(',');
                                 sub.add_option("-d,--depth", opt->depth, "Context depths prefilled before each test")
                                     ->delimiter(',');
                                 sub.add_option("-r,--repetitions", opt->repetitions, "Timed repetitions per test");
                                 sub.add_option("-b,--batch-size", opt->n_batch, "Tokens per forward pass");
                                 sub.add_option("--n-gpu-layers", opt->ngl,
                                                "Layers on the GPU: a number or all (also -ngl; a build without a GPU "
                                                "backend warns and runs on the CPU)");
                                 sub.add_option("--cache-type-k", opt->cache_type_k,
                                                std::string("K cache type (also -ctk): ") + runtime::kCacheTypeNames);
                                 sub.add_option("--cache-type-v", opt->cache_type_v,
                                                std::string("V cache type (also -ctv): ") + runtime::kCacheTypeNames);
                                 sub.add_option("--flash-attn", opt->flash_attn,
                                                "llama-bench's -fa 0|1: accepted; ferrite has one attention path")
                                     ->delimiter(',');
                                 sub.add_option("--mmap", opt->mmap,
                                                "llama-bench's -mmp 0|1: accepted; the file is always mapped")
                                     ->delimiter(',');
                                 sub.add_option("-o,--output", opt->output, "Output format: md, json or csv");
                                 sub.add_option("--probe-mib", opt->probe_mib,
                                                "Bandwidth probe buffer in MiB (default: 8 x LLC, >= 256)");
                                 add_model_options(sub, opt->lora, kLoraOptions);
                                 sub.add_option("--isa", opt->isa,
                                                "Highest instruction-set level: scalar, avx2, avx512, avx512vnni, "
                                                "amx, neon or neon_i8mm (clamped to the CPU; default: FERRITE_ISA or the CPU's)");
                                 return [opt] { return run_bench(*opt); };
                               }});

}  // namespace
}  // namespace ferrite::tools
