// A loopback TCP client that sends exactly the bytes a test gives it, for
// requests no HTTP library would send (endless headers, chunked floods,
// half-sent requests, clients that never read), and a prober that checks
// /health keeps answering while such clients hold the server.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

namespace ferrite::server::test {

class RawClient {
 public:
  // rcvbuf > 0: a small receive buffer (a client that never reads stalls
  // the server's writes sooner).
  explicit RawClient(int port, int rcvbuf = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return;
    if (rcvbuf > 0) ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~RawClient() { close(); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool connected() const { return connected_; }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  // Sends everything (false when the server closed or reset the connection).
  bool send(const std::string& bytes) {
    size_t at = 0;
    while (at < bytes.size()) {
      const ssize_t n = ::send(fd_, bytes.data() + at, bytes.size() - at, MSG_NOSIGNAL);
      if (n <= 0) return false;
      at += static_cast<size_t>(n);
    }
    return true;
  }

  // Whether the server has sent something (or closed) within `ms`.
  bool readable(int ms) const {
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, ms) > 0;
  }

  // Reads until the connection closes or `ms` pass without data.
  std::string read_all(int ms = 10000) {
    std::string out;
    char buf[16384];
    while (readable(ms)) {
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
    return out;
  }

  // Reads until `needle` has arrived, the connection closes, or `ms` pass
  // without data.
  std::string read_until(const std::string& needle, int ms) {
    std::string out;
    char buf[4096];
    while (out.find(needle) == std::string::npos && readable(ms)) {
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
    return out;
  }

  // The status of an HTTP response's first line (0 when none).
  static int status_of(const std::string& response) {
    int status = 0;
    return std::sscanf(response.c_str(), "HTTP/1.%*d %d", &status) == 1 ? status : 0;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

// Asks GET /health over a fresh connection every few milliseconds until
// stopped; records the slowest answer and any that failed or took longer
// than a second.
class HealthProbe {
 public:
  explicit HealthProbe(int port) : port_(port), thread_([this] { run(); }) {}
  ~HealthProbe() { stop(); }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  int failures() const { return failures_.load(); }
  int probes() const { return probes_.load(); }
  double slowest_ms() const { return slowest_ms_.load(); }

 private:
  static constexpr int kLimitMs = 1000;
  static constexpr auto kPeriod = std::chrono::milliseconds(20);

  // At least one probe, however soon stop() comes (a scenario shorter than
  // the thread's start would otherwise see none).
  void run() {
    for (;;) {
      probe();
      std::unique_lock<std::mutex> lock(mu_);
      if (cv_.wait_for(lock, kPeriod, [&] { return stop_; })) return;
    }
  }

  void probe() {
    const auto t0 = std::chrono::steady_clock::now();
    RawClient c(port_);
    bool ok = c.connected() && c.send("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    if (ok) ok = RawClient::status_of(c.read_until("\"status\"", kLimitMs)) == 200;
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    ++probes_;
    if (!ok || ms > kLimitMs) ++failures_;
    double prev = slowest_ms_.load();
    while (ms > prev && !slowest_ms_.compare_exchange_weak(prev, ms)) {
    }
  }

  int port_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::atomic<int> failures_{0};
  std::atomic<int> probes_{0};
  std::atomic<double> slowest_ms_{0.0};
  std::thread thread_;
};

}  // namespace ferrite::server::test
