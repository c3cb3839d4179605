// The in-process test server (built into test_server; no tests here).
#include "server_fixture.h"

#include "model/lora_adapter.h"

#include <unistd.h>

#include <csignal>
#include <cstdio>

#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace ferrite::server::test {

namespace {
// Debian's cpp-httplib client writes without MSG_NOSIGNAL: a server that
// answers early and closes would kill the test process with SIGPIPE.
const bool kSigpipeIgnored = [] {
  std::signal(SIGPIPE, SIG_IGN);
  return true;
}();
}  // namespace

TestServer::TestServer(const std::string& model_path, const ServerConfig& cfg) {
  auto model = model::Model::load(model_path);
  auto tok = std::make_shared<const tokenizer::Tokenizer>(tokenizer::Tokenizer::from_gguf(model->file()));
  EngineOptions eo;
  eo.n_parallel = cfg.parallel;
  eo.n_ctx = cfg.n_ctx;
  eo.n_batch = cfg.n_batch;
  eo.n_threads = 1;
  eo.max_queue = cfg.max_queue;
  eo.context_shift = cfg.context_shift;
  eo.after_step = [this] { gate_.pass(); };
  for (const std::string& f : cfg.lora) eo.lora.push_back(model::LoraAdapter::load(f, *model));
  eo.lora_scales = cfg.lora_scales;
  if (cfg.engine) cfg.engine(eo);
  engine_ = std::make_unique<Engine>(model, tok, eo);
  ServerOptions so;
  so.host = "127.0.0.1";
  so.port = 0;
  so.model_id = "stories260K";
  so.model_path = model_path;
  if (!cfg.api_key.empty()) so.api_keys = {cfg.api_key};
  so.log_format = LogFormat::Off;
  so.max_body_bytes = cfg.max_body;
  if (cfg.server) cfg.server(so);
  http_ = std::make_unique<HttpServer>(*engine_, so);
  port_ = http_->bind();
  thread_ = std::thread([this] { http_->serve(); });
}

TestServer::~TestServer() {
  gate_.open();
  http_->stop();
  thread_.join();
}

httplib::Client TestServer::client() const {
  httplib::Client c("127.0.0.1", port_);
  c.set_read_timeout(120, 0);
  c.set_write_timeout(120, 0);
  return c;
}

namespace {

std::pair<int, Json> result_of(const httplib::Result& r) {
  if (!r) return {-1, Json()};
  Json body = Json::parse(r->body, nullptr, false);
  return {r->status, body.is_discarded() ? Json() : body};
}

httplib::Headers auth(const std::string& key) {
  httplib::Headers h;
  if (!key.empty()) h.emplace("Authorization", "Bearer " + key);
  return h;
}

}  // namespace

std::pair<int, Json> TestServer::post(const std::string& path, const Json& body, const std::string& key) const {
  httplib::Client c = client();
  return result_of(c.Post(path.c_str(), auth(key), body.dump(), "application/json"));
}

std::pair<int, Json> TestServer::get(const std::string& path, const std::string& key) const {
  httplib::Client c = client();
  return result_of(c.Get(path.c_str(), auth(key)));
}

std::vector<std::string> sse_payloads(const std::string& body) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < body.size()) {
    size_t end = body.find("\n\n", at);
    if (end == std::string::npos) end = body.size();
    const std::string event = body.substr(at, end - at);
    if (event.rfind("data: ", 0) == 0) out.push_back(event.substr(6));
    at = end + 2;
  }
  return out;
}

std::vector<std::string> TestServer::stream(const std::string& path, const Json& body) const {
  httplib::Client c = client();
  httplib::Result r = c.Post(path.c_str(), body.dump(), "application/json");
  if (!r || r->status != 200) return {};
  return sse_payloads(r->body);
}

size_t resident_bytes() {
  long pages_total = 0, pages_resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  const int n = std::fscanf(f, "%ld %ld", &pages_total, &pages_resident);
  std::fclose(f);
  return n == 2 ? static_cast<size_t>(pages_resident) * static_cast<size_t>(sysconf(_SC_PAGESIZE)) : 0;
}

std::string golden_greedy_text() {
  return ::ferrite::test::read_file(::ferrite::test::shared_path("models/stories260K.greedy200.txt"));
}

}  // namespace ferrite::server::test
