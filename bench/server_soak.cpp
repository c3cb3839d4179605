// A soak test of the server (issue 24): an in-process server on a synth
// model and N streaming clients for a while (default 64 clients, 10
// minutes), each client in a loop: pick one of the prompts, stream a greedy
// completion, and either read it all, read it slowly, or hang up at a random
// point. It reports what was served and checks that
//   - every stream read to its end equals the single-client output of its
//     prompt (computed first, one request at a time),
//   - the server's resident memory at the end is within 10% of what it was
//     after the warm-up,
//   - /health answered within a second all along,
//   - no stream failed (an answer other than 200 or 503, or one cut short
//     that the client did not hang up on).
// Exit status 1 when a check fails.
//
//   build/bench/server_soak [--model synth-llama-Q4_0.gguf] [--seconds 600] [--clients 64] [--parallel 8]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/model.h"
#include "server/engine.h"
#include "server/http_server.h"
#include "tokenizer/tokenizer.h"

namespace {

using Json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;
using namespace ferrite;

struct Options {
  std::string model;
  double seconds = 600;
  int clients = 64;
  int parallel = 8;
  int prompts = 32;
  int tokens = 48;
  double warmup_s = 30;
};

size_t resident_bytes() {
  long total = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  const int n = std::fscanf(f, "%ld %ld", &total, &resident);
  std::fclose(f);
  return n == 2 ? static_cast<size_t>(resident) * static_cast<size_t>(sysconf(_SC_PAGESIZE)) : 0;
}

int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    if (fd >= 0) ::close(fd);
    return -1;
  }
  return fd;
}

bool send_all(int fd, const std::string& s) {
  size_t at = 0;
  while (at < s.size()) {
    const ssize_t n = ::send(fd, s.data() + at, s.size() - at, MSG_NOSIGNAL);
    if (n <= 0) return false;
    at += static_cast<size_t>(n);
  }
  return true;
}

std::string request(const Json& body) {
  const std::string b = body.dump();
  return "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nConnection: close\r\n"
         "Content-Length: " + std::to_string(b.size()) + "\r\n\r\n" + b;
}

Json prompt_of(int i) { return Json::array({1, 100 + 7 * i, 200 + 3 * i, 300 + i}); }

// The text of the `data:` events of a (chunked) SSE body, and whether [DONE] came.
struct Stream {
  std::string text;
  bool done = false;
  int status = 0;
};

Stream parse_stream(const std::string& raw) {
  Stream s;
  std::sscanf(raw.c_str(), "HTTP/1.%*d %d", &s.status);
  size_t at = 0;
  while ((at = raw.find("data: ", at)) != std::string::npos) {
    const size_t end = raw.find("\n\n", at);
    if (end == std::string::npos) break;
    const std::string payload = raw.substr(at + 6, end - at - 6);
    at = end + 2;
    if (payload == "[DONE]") {
      s.done = true;
      break;
    }
    const Json j = Json::parse(payload, nullptr, false);
    if (j.is_object() && j.contains("choices") && !j["choices"].empty()) s.text += j["choices"][0]["text"].get<std::string>();
  }
  return s;
}

enum class Behaviour { Normal, Slow, HangUp };

struct Totals {
  std::atomic<uint64_t> completed{0}, mismatched{0}, hung_up{0}, slow{0}, busy{0}, failed{0}, bytes{0};
  // Why streams failed: no answer at all (connect, send, or silence), an
  // answer other than 200/503, a 200 stream that ended before [DONE].
  std::atomic<uint64_t> no_answer{0}, bad_status{0}, cut_short{0};
};

// One streamed request; false when the client hung up on purpose.
void one_stream(int port, int prompt, Behaviour b, std::mt19937& rng, const Options& opt,
                const std::vector<std::string>& reference, Totals& t) {
  const int fd = connect_to(port);
  if (fd < 0) {
    ++t.failed;
    ++t.no_answer;
    return;
  }
  const Json body = {{"prompt", prompt_of(prompt)}, {"max_tokens", opt.tokens}, {"temperature", 0}, {"stream", true}};
  if (!send_all(fd, request(body))) {
    ::close(fd);
    ++t.failed;
    ++t.no_answer;
    return;
  }
  std::string raw;
  const size_t hang_after = b == Behaviour::HangUp ? std::uniform_int_distribution<size_t>(0, 3000)(rng) : SIZE_MAX;
  char buf[512];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 60000) <= 0) break;
    const ssize_t n = ::recv(fd, buf, b == Behaviour::Slow ? 64 : sizeof buf, 0);
    if (n <= 0) break;
    raw.append(buf, static_cast<size_t>(n));
    t.bytes += static_cast<uint64_t>(n);
    if (raw.size() >= hang_after) {
      ::close(fd);
      ++t.hung_up;
      return;
    }
    if (b == Behaviour::Slow) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::close(fd);
  const Stream s = parse_stream(raw);
  if (s.status == 503) {
    ++t.busy;
  } else if (s.status != 200 || !s.done) {
    ++t.failed;
    ++(s.status == 0 ? t.no_answer : s.status != 200 ? t.bad_status : t.cut_short);
  } else if (s.text != reference[static_cast<size_t>(prompt)]) {
    ++t.mismatched;
    std::fprintf(stderr, "soak: prompt %d differs:\n  alone:  %s\n  stream: %s\n", prompt,
                 reference[static_cast<size_t>(prompt)].c_str(), s.text.c_str());
  } else {
    ++t.completed;
    if (b == Behaviour::Slow) ++t.slow;
  }
}

std::string completion_alone(int port, int prompt, const Options& opt) {
  const int fd = connect_to(port);
  if (fd < 0) return {};
  send_all(fd, request({{"prompt", prompt_of(prompt)}, {"max_tokens", opt.tokens}, {"temperature", 0}, {"stream", true}}));
  std::string raw;
  char buf[4096];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) raw.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return parse_stream(raw).text;
}

double health_ms(int port) {
  const auto t0 = Clock::now();
  const int fd = connect_to(port);
  if (fd < 0) return 1e9;
  send_all(fd, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  char buf[1024];
  pollfd p{fd, POLLIN, 0};
  const bool ok = ::poll(&p, 1, 5000) > 0 && ::recv(fd, buf, sizeof buf, 0) > 0;
  ::close(fd);
  return ok ? std::chrono::duration<double, std::milli>(Clock::now() - t0).count() : 1e9;
}

Options parse(int argc, char** argv) {
  Options o;
  const char* shared = std::getenv("FERRITE_SHARED");
  o.model = std::string(shared ? shared : "../shared") + "/models/synth/synth-llama-Q4_0.gguf";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const char* v = argv[i + 1];
    if (k == "--model") o.model = v;
    else if (k == "--seconds") o.seconds = std::atof(v);
    else if (k == "--clients") o.clients = std::atoi(v);
    else if (k == "--parallel") o.parallel = std::atoi(v);
    else if (k == "--tokens") o.tokens = std::atoi(v);
    else if (k == "--warmup") o.warmup_s = std::atof(v);
    else {
      std::fprintf(stderr, "server_soak: unknown option %s\n", k.c_str());
      std::exit(2);
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const Options opt = parse(argc, argv);
  auto model = model::Model::load(opt.model);
  auto tok = std::make_shared<const tokenizer::Tokenizer>(tokenizer::Tokenizer::from_gguf(model->file()));
  server::EngineOptions eo;
  eo.n_parallel = opt.parallel;
  eo.n_ctx = static_cast<int64_t>(opt.parallel) * 128;
  eo.max_queue = static_cast<size_t>(opt.clients);
  server::Engine engine(model, tok, eo);
  server::ServerOptions so;
  so.port = 0;
  so.model_id = "soak";
  so.log_format = server::LogFormat::Off;
  so.front.write_timeout_s = 5;
  server::HttpServer http(engine, so);
  const int port = http.bind();
  std::thread serving([&] { http.serve(); });

  std::vector<std::string> reference;
  for (int i = 0; i < opt.prompts; ++i) reference.push_back(completion_alone(port, i, opt));
  std::printf("soak: %d prompts alone, %d tokens each; %d clients, %d slots, %.0f s\n", opt.prompts, opt.tokens,
              opt.clients, opt.parallel, opt.seconds);

  Totals t;
  std::atomic<bool> stop{false};
  std::vector<std::thread> clients;
  for (int c = 0; c < opt.clients; ++c) {
    clients.emplace_back([&, c] {
      std::mt19937 rng(static_cast<uint32_t>(c) * 7919u + 1);
      while (!stop) {
        const int prompt = std::uniform_int_distribution<int>(0, opt.prompts - 1)(rng);
        const int roll = std::uniform_int_distribution<int>(0, 99)(rng);
        const Behaviour b = roll < 15 ? Behaviour::HangUp : roll < 30 ? Behaviour::Slow : Behaviour::Normal;
        one_stream(port, prompt, b, rng, opt, reference, t);
      }
    });
  }
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opt.seconds));
  const auto warm = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opt.warmup_s));
  size_t rss_warm = 0, rss_max = 0;
  double health_worst = 0;
  while (Clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    health_worst = std::max(health_worst, health_ms(port));
    const size_t rss = resident_bytes();
    if (rss_warm == 0 && Clock::now() >= warm) rss_warm = rss;
    rss_max = std::max(rss_max, rss);
  }
  const size_t rss_end = resident_bytes();
  stop = true;
  for (auto& th : clients) th.join();
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  const server::EngineStats es = engine.stats();
  http.stop();
  serving.join();

  const double growth = rss_warm ? (static_cast<double>(rss_end) - static_cast<double>(rss_warm)) / static_cast<double>(rss_warm) : 0;
  std::printf("soak: %.0f s: %llu streams completed (%llu read slowly), %llu hung up on purpose, %llu busy (503), "
              "%llu failed, %llu differed from alone\n",
              secs, static_cast<unsigned long long>(t.completed.load()), static_cast<unsigned long long>(t.slow.load()),
              static_cast<unsigned long long>(t.hung_up.load()), static_cast<unsigned long long>(t.busy.load()),
              static_cast<unsigned long long>(t.failed.load()), static_cast<unsigned long long>(t.mismatched.load()));
  std::printf("soak: failed: %llu without an answer, %llu with another status, %llu cut short\n",
              static_cast<unsigned long long>(t.no_answer.load()), static_cast<unsigned long long>(t.bad_status.load()),
              static_cast<unsigned long long>(t.cut_short.load()));
  std::printf("soak: engine: %llu requests, %llu cancelled, %llu tokens generated, %llu steps\n",
              static_cast<unsigned long long>(es.requests), static_cast<unsigned long long>(es.cancelled),
              static_cast<unsigned long long>(es.generated_tokens), static_cast<unsigned long long>(es.steps));
  std::printf("soak: RSS after warm-up %.1f MiB, peak %.1f MiB, end %.1f MiB (%+.1f%%); slowest /health %.1f ms\n",
              rss_warm / 1048576.0, rss_max / 1048576.0, rss_end / 1048576.0, growth * 100, health_worst);
  const bool ok = t.mismatched == 0 && t.failed == 0 && t.completed > 0 && growth <= 0.10 && health_worst < 1000;
  std::printf("soak: %s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
