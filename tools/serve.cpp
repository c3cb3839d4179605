// `ferrite serve MODEL [--host H] [--port P] [-np N] [-c CTX] [-b BATCH]
//  [-ngl N|all | --fit] [--api-key KEY | --api-key-file F] [--log-format text|json|none] ...`
// An OpenAI-compatible HTTP server with continuous batching (src/server);
// llama-server's option spellings. A slot that fills its share of the
// context shifts (drops the oldest half after the request's n_keep) unless
// --no-context-shift. SIGTERM / SIGINT cancel in-flight requests and exit 0
// within the shutdown grace period. While it listens, the server is listed
// by `ferrite ps`.
#include <pthread.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "command.h"
#include "core/error.h"
#include "model/model.h"
#include "model_options.h"
#include "speculative_options.h"
#include "runtime/offload.h"
#include "server_registry.h"
#include "server/engine.h"
#include "server/http_server.h"
#include "tokenizer/tokenizer.h"

namespace ferrite::tools {
namespace {

struct ServeOptions {
  ModelOptions model;
  SpeculativeOptions spec;   // -md, --spec-type, --draft-max, ...
  std::string alias;
  std::string host = "127.0.0.1";
  int port = 8080;
  int parallel = 1;
  size_t queue = 64;
  bool no_context_shift = false;
  bool no_prefix_cache = false;
  bool no_webui = false;
  std::string api_key;
  std::string api_key_file;
  std::string log_format = "text";
  std::string chat_template;
  std::string pooling;       // --pooling for --embeddings: none, mean, cls, last
  server::ServerOptions so;  // limits and switches set straight from flags
};

int pooling_code(const std::string& name) {
  if (name.empty()) return -1;
  if (name == "none") return 0;
  if (name == "mean") return 1;
  if (name == "cls") return 2;
  if (name == "last") return 3;
  throw InvalidArgument("--pooling must be none, mean, cls or last");
}

std::string base_name(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

int run_serve(const ServeOptions& opt) {
  server::ServerOptions so = opt.so;
  so.host = opt.host;
  so.port = opt.port;
  so.chat_template = opt.chat_template;
  so.webui = !opt.no_webui;
  if (opt.log_format == "json") so.log_format = server::LogFormat::Json;
  else if (opt.log_format == "none") so.log_format = server::LogFormat::Off;
  else if (opt.log_format != "text") throw InvalidArgument("--log-format must be text, json or none");
  if (!opt.api_key.empty() && !opt.api_key_file.empty()) throw InvalidArgument("give --api-key or --api-key-file, not both");
  so.api_keys = opt.api_key_file.empty() ? server::split_api_keys(opt.api_key) : server::read_api_key_file(opt.api_key_file);

  // Signals go to one waiting thread; every thread started below inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  LoadedModel lm = load_model(opt.model, std::max(opt.parallel, 1));  // --fit: a sliding window per slot
  const std::string& path = lm.path;
  const std::shared_ptr<const model::Model>& model = lm.model;
  so.model_path = path;
  so.model_id = opt.alias.empty() ? base_name(path) : opt.alias;
  auto tok = std::make_shared<const tokenizer::Tokenizer>(tokenizer::Tokenizer::from_gguf(model->file()));
  const int ngl = lm.context.n_gpu_layers;
  SlotDrafters drafters = slot_drafters(opt.spec, opt.model, lm.context.n_threads, *tok);
  server::Engine engine(model, tok,
                        {.n_parallel = opt.parallel, .n_ctx = lm.context.n_ctx, .n_batch = lm.context.n_batch,
                         .n_threads = lm.context.n_threads, .max_queue = opt.queue, .after_step = {},
                         .cache_type_k = lm.context.cache_type,
                         .cache_type_v = lm.context.cache_type_v,
                         .swa_full = lm.context.swa_full,
                         .n_gpu_layers = ngl,
                         .context_shift = !opt.no_context_shift,
                         .prefix_cache = !opt.no_prefix_cache,
                         .embeddings = so.embeddings,
                         .pooling = pooling_code(opt.pooling),
                         .make_drafter = drafters,
                         .speculative = opt.spec.params,
                         .lora = lm.context.lora,
                         .lora_scales = lm.context.lora_scales});
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

  std::mutex mu;
  std::condition_variable cv;
  bool finished = false;
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    if (sig == 0) return;
    std::fprintf(stderr, "signal %d: shutting down\n", sig);
    http.stop();
    // Whatever is still running after the grace period (and a margin for
    // the engine's current step) does not hold the process.
    const auto limit = std::chrono::duration<double>(so.front.shutdown_grace_s + 5.0);
    std::unique_lock<std::mutex> lock(mu);
    if (!cv.wait_for(lock, limit, [&] { return finished; })) {
      std::fprintf(stderr, "shutdown: still busy after %.0f s; exiting\n", limit.count());
      std::fflush(stderr);
      _exit(1);
    }
  });
  const bool ok = http.serve();
  http.stop();
  {
    std::lock_guard<std::mutex> lock(mu);
    finished = true;
  }
  cv.notify_all();
  if (!ok) {
    // serve() ended without a signal (the listener failed): release the waiter.
    pthread_kill(waiter.native_handle(), SIGTERM);
  }
  waiter.join();
  return ok ? 0 : 1;
}

void add_limit_options(CLI::App& sub, server::ServerOptions& so) {
  server::http::FrontOptions& f = so.front;
  sub.add_option("--timeout", so.read_timeout_s,
                 "Seconds a request body may take to arrive once its headers are in (also -to)")
      ->capture_default_str();
  sub.add_option("--header-timeout", f.header_timeout_s, "Seconds a request's line and headers may take to arrive")
      ->capture_default_str();
  sub.add_option("--idle-timeout", f.idle_timeout_s, "Seconds a kept-alive connection may wait for its next request")
      ->capture_default_str();
  sub.add_option("--write-timeout", f.write_timeout_s,
                 "Seconds an answer may make no progress (a client that stops reading) before it is dropped")
      ->capture_default_str();
  sub.add_option("--max-body", so.max_body_bytes, "Largest request body in bytes (after de-chunking)")
      ->capture_default_str();
  sub.add_option("--max-header-bytes", f.reader.max_header_bytes, "Largest request line plus headers in bytes")
      ->capture_default_str();
  sub.add_option("--max-headers", f.reader.max_header_count, "Most header fields in a request")->capture_default_str();
  sub.add_option("--max-connections", f.max_connections,
                 "Open connections; beyond, the oldest one still sending a request is closed")
      ->capture_default_str();
  sub.add_option("--http-threads", so.http_threads, "Request workers (0: slots + queue + 8)")->capture_default_str();
  sub.add_option("--shutdown-timeout", f.shutdown_grace_s, "Seconds answers in flight get when stopping")
      ->capture_default_str();
  sub.add_option("--rate-limit", so.rate_limit_per_minute,
                 "Requests a minute per API key (or client address without keys); 0: no limit")
      ->capture_default_str();
  sub.add_option("--tokenize-max-bytes", so.max_tokenize_response_bytes, "Largest /tokenize answer in bytes")
      ->capture_default_str();
  sub.add_option("--schema-max-steps", so.schema_limits.max_steps, "JSON schema to grammar: most conversion steps")
      ->capture_default_str();
  sub.add_option("--schema-max-bytes", so.schema_limits.max_grammar_bytes, "JSON schema to grammar: largest grammar")
      ->capture_default_str();
  sub.add_option("--schema-timeout", so.schema_limits.max_seconds, "JSON schema to grammar: seconds")
      ->capture_default_str();
  sub.add_option("--template-max-bytes", so.template_limits.max_string_bytes,
                 "Chat template: largest string or list it builds, in bytes")
      ->capture_default_str();
  sub.add_option("--template-max-output", so.template_limits.max_output_bytes, "Chat template: largest prompt in bytes")
      ->capture_default_str();
  sub.add_option("--template-max-steps", so.template_limits.max_work, "Chat template: most evaluation steps")
      ->capture_default_str();
  sub.add_option("--template-timeout", so.template_limits.max_seconds, "Chat template: seconds per render")
      ->capture_default_str();
}

const CommandRegistrar kServe({"serve", "Serve a model over an OpenAI-compatible HTTP API",
                               [](CLI::App& sub) -> std::function<int()> {
                                 auto opt = std::make_shared<ServeOptions>();
                                 server::ServerOptions& so = opt->so;
                                 add_model_options(sub, opt->model);
                                 add_speculative_options(sub, opt->spec);
                                 sub.add_option("-a,--alias", opt->alias, "Model id reported by the API (default: file name)");
                                 sub.add_option("--host", opt->host,
                                                "Address to listen on (not loopback: requests may name any host)");
                                 sub.add_option("--port", opt->port, "Port (0: any free port)");
                                 sub.add_option("--parallel", opt->parallel, "Slots, concurrent sequences (also -np)");
                                 sub.add_option("--queue-size", opt->queue, "Requests that may wait for a slot (beyond: 503)");
                                 sub.add_option("--api-key", opt->api_key,
                                                "Require 'Authorization: Bearer KEY' (several keys: comma-separated)");
                                 sub.add_option("--api-key-file", opt->api_key_file, "Read the API keys from a file (one a line)");
                                 sub.add_flag("--cont-batching")->description("Accepted for llama-server's -cb: batching is always continuous");
                                 sub.add_flag("--no-context-shift", opt->no_context_shift,
                                              "A slot that fills its context ends the request (finish_reason length) "
                                              "instead of dropping the oldest half of it");
                                 sub.add_flag("--no-prefix-cache", opt->no_prefix_cache,
                                              "Evaluate every prompt in its own slot, even when another slot's cache "
                                              "holds its start (by default those cells are copied)");
                                 sub.add_option("--log-format", opt->log_format, "Access log: text, json or none");
                                 sub.add_option("--chat-template", opt->chat_template, "Built-in template name or file (default: the model's)");
                                 sub.add_option("--chat-template-file", opt->chat_template, "Jinja file of the chat template");
                                 sub.add_flag("--jinja")->description("Accepted for llama.cpp's option: chat templates always run as Jinja");
                                 sub.add_option("--cors", so.cors_origins,
                                                "Let pages from ORIGIN (https://example.com, or * for any) call the API "
                                                "from a browser (repeatable); others get 403");
                                 sub.add_flag("--no-webui", opt->no_webui, "Serve no chat page at / (404 there)");
                                 sub.add_flag("--props-paths", so.props_paths, "Show the model's file path in /props");
                                 sub.add_flag("--strict-model", so.strict_model,
                                              "Refuse requests naming another model (default: any name is this model)");
                                 sub.add_flag("--embeddings", so.embeddings,
                                              "Serve /v1/embeddings from a text generator's hidden states");
                                 sub.add_option("--pooling", opt->pooling,
                                                "Pooling of --embeddings: none, mean, cls or last (default: the model's, else mean)");
                                 sub.add_option("--slot-save-path", so.slot_save_path,
                                                "Folder where POST /slots/ID?action=save|restore keeps slot files");
                                 add_limit_options(sub, so);
                                 return [opt] { return run_serve(*opt); };
                               }});

}  // namespace
}  // namespace ferrite::tools
