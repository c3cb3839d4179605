// `ferrite serve MODEL [--host H] [--port P] [-np N] [-c CTX] [-b BATCH]
//  [-ngl N|all | --fit] [--api-key KEY | --api-key-file F] [--log-format text|json|none] ...`
// An OpenAI-compatible HTTP server with continuous batching (src/server);
// llama-server's option spellings. A slot that fills its share of the
// context shifts (drops the oldest half after the request's n_keep) unless
// --no-context-shift. SIGTERM / SIGINT cancel in-flight requests and exit 0.
// While it listens, the server is listed by `ferrite ps`.
#include <pthread.h>

#include <csignal>
#include <ctime>
#include <unistd.h>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "command.h"
#include "core/error.h"
#include "model/model.h"
#include "model_options.h"
#include "runtime/offload.h"
#include "server_registry.h"
#include "server/engine.h"
#include "server/http_server.h"
#include "tokenizer/tokenizer.h"

namespace ferrite::tools {
namespace {

struct ServeOptions {
  ModelOptions model;
  std::string alias;
  std::string host = "127.0.0.1";
  int port = 8080;
  int parallel = 1;
  size_t queue = 64;
  bool no_context_shift = false;
  std::string api_key;
  std::string api_key_file;
  std::string log_format = "text";
  std::string chat_template;
  int read_timeout = server::kDefaultReadTimeoutSeconds;
  size_t max_body = server::kDefaultMaxBodyBytes;
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

  LoadedModel lm = load_model(opt.model);
  const std::string& path = lm.path;
  const std::shared_ptr<const model::Model>& model = lm.model;
  so.model_path = path;
  so.model_id = opt.alias.empty() ? base_name(path) : opt.alias;
  auto tok = std::make_shared<const tokenizer::Tokenizer>(tokenizer::Tokenizer::from_gguf(model->file()));
  const int ngl = lm.context.n_gpu_layers;
  server::Engine engine(model, tok,
                        {.n_parallel = opt.parallel, .n_ctx = lm.context.n_ctx, .n_batch = lm.context.n_batch,
                         .n_threads = lm.context.n_threads, .max_queue = opt.queue, .after_step = {},
                         .cache_type_k = lm.context.cache_type,
                         .cache_type_v = lm.context.cache_type_v,
                         .n_gpu_layers = ngl,
                         .context_shift = !opt.no_context_shift});
  server::HttpServer http(engine, so);
  const int port = http.bind();
  const std::string gpu = ngl == 0 ? "" : ngl == runtime::kAllLayers ? ", every layer on the GPU"
                                                                     : ", " + std::to_string(ngl) + " layers on the GPU";
  // Listed by `ferrite ps` from now on (before the line that says it serves).
  const ServerRegistration registration({.pid = static_cast<int>(::getpid()),
                                         .host = so.host,
                                         .port = port,
                                         .model = so.model_id,
                                         .model_path = path,
                                         .parallel = engine.n_parallel(),
                                         .n_ctx = static_cast<long long>(engine.n_ctx()),
                                         .started = static_cast<long long>(std::time(nullptr))});
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

const CommandRegistrar kServe({"serve", "Serve a model over an OpenAI-compatible HTTP API",
                               [](CLI::App& sub) -> std::function<int()> {
                                 auto opt = std::make_shared<ServeOptions>();
                                 add_model_options(sub, opt->model);
                                 sub.add_option("-a,--alias", opt->alias, "Model id reported by the API (default: file name)");
                                 sub.add_option("--host", opt->host, "Address to listen on");
                                 sub.add_option("--port", opt->port, "Port (0: any free port)");
                                 sub.add_option("--parallel", opt->parallel, "Slots, concurrent sequences (also -np)");
                                 sub.add_option("--queue-size", opt->queue, "Requests that may wait for a slot (beyond: 503)");
                                 sub.add_flag("--cont-batching")->description("Accepted for llama-server's -cb: batching is always continuous");
                                 sub.add_flag("--no-context-shift", opt->no_context_shift,
                                              "A slot that fills its context ends the request (finish_reason length) "
                                              "instead of dropping the oldest half of it");
                                 sub.add_option("--api-key", opt->api_key, "Require 'Authorization: Bearer KEY'");
                                 sub.add_option("--api-key-file", opt->api_key_file, "Read the API key from a file");
                                 sub.add_option("--log-format", opt->log_format, "Access log: text, json or none");
                                 sub.add_option("--chat-template", opt->chat_template, "Built-in template name or file (default: the model's)");
                                 sub.add_option("--chat-template-file", opt->chat_template, "Jinja file of the chat template");
                                 sub.add_flag("--jinja")->description("Accepted for llama.cpp's option: chat templates always run as Jinja");
                                 sub.add_option("--timeout", opt->read_timeout, "Seconds to wait on a slow client read (also -to)");
                                 sub.add_option("--max-body", opt->max_body, "Largest request body in bytes");
                                 return [opt] { return run_serve(*opt); };
                               }});

}  // namespace
}  // namespace ferrite::tools
