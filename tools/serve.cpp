// `ferrite serve -m MODEL [--host H] [--port P] [--parallel N] [-c CTX] [-b BATCH]
//  [-ngl N|all | --fit] [--api-key KEY | --api-key-file F] [--log-format text|json|none] ...`
// An OpenAI-compatible HTTP server with continuous batching (src/server).
// SIGTERM / SIGINT cancel in-flight requests and exit 0.
#include <pthread.h>

#include <csignal>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "command.h"
#include "core/error.h"
#include "gpu_layers.h"
#include "model/model.h"
#include "runtime/offload.h"
#include "load_bar.h"
#include "model_path.h"
#include "server/engine.h"
#include "server/http_server.h"
#include "tokenizer/tokenizer.h"

namespace ferrite::tools {
namespace {

struct ServeOptions {
  std::string model;
  std::string alias;
  std::string host = "127.0.0.1";
  int port = 8080;
  int parallel = 1;
  int64_t n_ctx = 0;
  int64_t n_batch = 512;
  int threads = 0;
  size_t queue = 64;
  std::string api_key;
  std::string api_key_file;
  std::string log_format = "text";
  std::string chat_template;
  int read_timeout = server::kDefaultReadTimeoutSeconds;
  size_t max_body = server::kDefaultMaxBodyBytes;
  std::string cache_type_k = "f16";
  std::string cache_type_v = "f16";
  std::string n_gpu_layers = "0";  // -ngl: layers on the GPU, a number or "all"
  bool fit = false;                // --fit: the largest -ngl that fits in the GPU's free memory
};

std::string base_name(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

int run_serve(const ServeOptions& opt) {
  server::ServerOptions so;
  so.host = opt.host;
  so.port = opt.port;
  so.chat_template = opt.chat_template;
  so.read_timeout_s = opt.read_timeout;
  so.max_body_bytes = opt.max_body;
  if (opt.log_format == "json") so.log_format = server::LogFormat::Json;
  else if (opt.log_format == "none") so.log_format = server::LogFormat::Off;
  else if (opt.log_format != "text") throw InvalidArgument("--log-format must be text, json or none");
  if (!opt.api_key.empty() && !opt.api_key_file.empty()) throw InvalidArgument("give --api-key or --api-key-file, not both");
  so.api_key = opt.api_key_file.empty() ? opt.api_key : server::read_api_key_file(opt.api_key_file);

  // Signals go to one waiting thread; every thread started below inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  const std::string path = resolve_model_argument(opt.model);
  so.model_path = path;
  so.model_id = opt.alias.empty() ? base_name(path) : opt.alias;
  std::shared_ptr<const model::Model> model = load_model_with_bar(path);
  auto tok = std::make_shared<const tokenizer::Tokenizer>(tokenizer::Tokenizer::from_gguf(model->file()));
  const TensorType type_k = runtime::cache_type_from_name(opt.cache_type_k, "--cache-type-k");
  const TensorType type_v = runtime::cache_type_from_name(opt.cache_type_v, "--cache-type-v");
  const int ngl = gpu_layers_from_options(opt.n_gpu_layers, opt.fit, *model, opt.n_ctx, type_k, type_v);
  server::Engine engine(model, tok,
                        {.n_parallel = opt.parallel, .n_ctx = opt.n_ctx, .n_batch = opt.n_batch,
                         .n_threads = opt.threads, .max_queue = opt.queue, .after_step = {},
                         .cache_type_k = type_k,
                         .cache_type_v = type_v,
                         .n_gpu_layers = ngl});
  server::HttpServer http(engine, so);
  const int port = http.bind();
  const std::string gpu = ngl == 0 ? "" : ngl == runtime::kAllLayers ? ", every layer on the GPU"
                                                                     : ", " + std::to_string(ngl) + " layers on the GPU";
  std::fprintf(stderr, "serving %s on http://%s:%d (%d slots, %lld tokens of context each%s)\n", so.model_id.c_str(),
               so.host.c_str(), port, engine.n_parallel(), static_cast<long long>(engine.slot_ctx()), gpu.c_str());

  std::thread waiter([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    if (sig != 0) {
      std::fprintf(stderr, "signal %d: shutting down\n", sig);
      http.stop();
    }
  });
  const bool ok = http.serve();
  if (!ok) {
    // serve() ended without a signal (the listener failed): release the waiter.
    pthread_kill(waiter.native_handle(), SIGTERM);
  }
  waiter.join();
  http.stop();
  return ok ? 0 : 1;
}

// llama.cpp spells it -ngl, which CLI11 cannot declare.
const OptionAliasRegistrar kNglAlias({"serve", "-ngl", "--ngl"});

const CommandRegistrar kServe({"serve", "Serve a model over an OpenAI-compatible HTTP API",
                               [](CLI::App& sub) -> std::function<int()> {
                                 auto opt = std::make_shared<ServeOptions>();
                                 sub.add_option("-m,--model", opt->model, "Model file or name")->required();
                                 sub.add_option("-a,--alias", opt->alias, "Model id reported by the API (default: file name)");
                                 sub.add_option("--host", opt->host, "Address to listen on");
                                 sub.add_option("--port", opt->port, "Port (0: any free port)");
                                 sub.add_option("--parallel", opt->parallel, "Slots (concurrent sequences)");
                                 sub.add_option("-c,--ctx-size", opt->n_ctx, "Total context, shared by the slots (0: the model's, up to 4096)");
                                 sub.add_option("-b,--batch-size", opt->n_batch, "Tokens per engine step");
                                 sub.add_option("-t,--threads", opt->threads, "Threads (0: all CPUs)");
                                 sub.add_option("--queue-size", opt->queue, "Requests that may wait for a slot (beyond: 503)");
                                 sub.add_option("--api-key", opt->api_key, "Require 'Authorization: Bearer KEY'");
                                 sub.add_option("--api-key-file", opt->api_key_file, "Read the API key from a file");
                                 sub.add_option("--log-format", opt->log_format, "Access log: text, json or none");
                                 sub.add_option("--chat-template", opt->chat_template, "Built-in template name or file (default: the model's)");
                                 sub.add_option("--timeout", opt->read_timeout, "Seconds to wait on a slow client read");
                                 sub.add_option("--max-body", opt->max_body, "Largest request body in bytes");
                                 sub.add_option("--cache-type-k", opt->cache_type_k, std::string("K cache type: ") + runtime::kCacheTypeNames);
                                 sub.add_option("--cache-type-v", opt->cache_type_v, std::string("V cache type: ") + runtime::kCacheTypeNames);
                                 sub.add_option("--ngl,--n-gpu-layers", opt->n_gpu_layers,
                                                "Layers on the GPU: a number or all (needs a CUDA build)");
                                 sub.add_flag("--fit", opt->fit,
                                              "Offload the most layers that fit in the GPU's free memory (prints the numbers)");
                                 return [opt] { return run_serve(*opt); };
                               }});

}  // namespace
}  // namespace ferrite::tools
