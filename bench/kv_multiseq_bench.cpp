// Decode speed with several sequences in one shared KV cache (as the
// server's slots): each sequence gets a prompt, then every step decodes one
// token of every sequence in one batch. Prints prompt and decode tokens/s
// for each sequence count.
//
// Built with -DFERRITE_BENCH=ON (bench/CMakeLists.txt): `ninja -C build kv_multiseq_bench`.
// Run:
//   build/bench/kv_multiseq_bench MODEL.gguf [--seqs 1,8,32] [--prompt 64] [--steps 32] [--ctx 4096]
//                                      [--threads 2] [--cache f16|q8_0|q4_0] [--regions 1|0]
// --regions 0 allocates cells first-free (the cache before sequence regions:
// decode steps interleave the sequences' cells, so every token's span is the
// whole used cache and attention and masks cover every cell, as before).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <sstream>
#include <string>
#include <vector>

#include "model/model.h"
#include "runtime/batch.h"
#include "runtime/context.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::vector<int> parse_list(const std::string& s) {
  std::vector<int> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(std::stoi(item));
  return out;
}

struct Options {
  std::string model;
  std::vector<int> seqs = {1, 8, 32};
  int prompt = 64;
  int steps = 32;
  int64_t ctx = 4096;
  int threads = 2;
  std::string cache = "f16";
  bool regions = true;
};

Options parse(int argc, char** argv) {
  if (argc < 2) throw std::runtime_error("usage: kv_multiseq_bench MODEL.gguf [options] (see the source)");
  Options o;
  o.model = argv[1];
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--seqs") o.seqs = parse_list(v);
    else if (k == "--prompt") o.prompt = std::stoi(v);
    else if (k == "--steps") o.steps = std::stoi(v);
    else if (k == "--ctx") o.ctx = std::stoll(v);
    else if (k == "--threads") o.threads = std::stoi(v);
    else if (k == "--cache") o.cache = v;
    else if (k == "--regions") o.regions = v != "0";
    else throw std::runtime_error("unknown option " + k);
  }
  return o;
}

void run(const std::shared_ptr<const ferrite::model::Model>& model, const Options& o, int n_seqs) {
  using namespace ferrite;
  const TensorType type = runtime::cache_type_from_name(o.cache, "--cache");
  runtime::Context ctx(model, {.n_ctx = o.ctx, .n_threads = o.threads, .cache_type = type, .cache_type_v = type});
  ctx.cache().set_sequence_regions(o.regions);
  const int64_t nv = model->hparams().n_vocab;
  auto token = [nv](int s, int i) { return static_cast<int32_t>((7919 * s + 104729 * i + 1) % (nv - 1) + 1); };

  const auto t0 = Clock::now();
  for (int s = 0; s < n_seqs; ++s) {
    std::vector<int32_t> prompt(static_cast<size_t>(o.prompt));
    for (int i = 0; i < o.prompt; ++i) prompt[static_cast<size_t>(i)] = token(s, i);
    ctx.eval(prompt, s);
  }
  const double prompt_s = seconds_since(t0);

  const auto t1 = Clock::now();
  runtime::Batch b;
  double checksum = 0;
  for (int i = 0; i < o.steps; ++i) {
    b.clear();
    for (int s = 0; s < n_seqs; ++s) b.add(token(s, o.prompt + i), o.prompt + i, s, true);
    ctx.decode(b);
    checksum += ctx.logits(n_seqs - 1)[0];
  }
  const double decode_s = seconds_since(t1);
  std::printf("%-10s seqs %3d  prompt %7.1f tok/s  decode %8.1f tok/s  (%d x %d tokens in %.2f s; checksum %.4f)\n",
              o.regions ? "regions" : "first-free", n_seqs, n_seqs * o.prompt / prompt_s, n_seqs * o.steps / decode_s,
              n_seqs, o.steps, decode_s, checksum);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options o = parse(argc, argv);
    auto model = ferrite::model::Model::load(o.model);
    for (int n : o.seqs) run(model, o, n);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
