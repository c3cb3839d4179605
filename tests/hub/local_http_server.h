// A tiny HTTP/1.1 server on 127.0.0.1 for the download tests, written on raw
// sockets so that each test controls exactly what goes over the wire: status,
// headers, Range support, redirects, and connections dropped mid-body.
//
// The listening socket is bound (port 0: the kernel picks a free port) and
// listening before the constructor returns, so clients can connect at once:
// the kernel queues connections until the serving thread accepts them. No
// readiness wait is needed.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace ferrite::test {

class LocalHttpServer {
 public:
  struct Route {
    int status = 200;
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers;  // extra response headers
    bool honor_range = true;     // answer "Range: bytes=N-" with 206
    std::string redirect_to;     // when set: 302 to this path
    size_t drop_after = 0;       // with drops > 0: send only this many body bytes, then close
    int drops = 0;               // how many of the next requests are cut short
  };

  struct Seen {
    std::string path;
    std::string range;          // the Range header, empty if none
    std::string authorization;  // the Authorization header, empty if none
  };

  LocalHttpServer() {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listen_fd_ < 0) throw std::runtime_error("socket() failed");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof addr;
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listen_fd_, kBacklog) != 0 ||
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      ::close(listen_fd_);
      throw std::runtime_error("cannot listen on 127.0.0.1");
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { serve(); });
  }

  ~LocalHttpServer() {
    stopping_ = true;
    ::shutdown(listen_fd_, SHUT_RDWR);  // wakes accept()
    thread_.join();
    ::close(listen_fd_);
  }

  LocalHttpServer(const LocalHttpServer&) = delete;
  LocalHttpServer& operator=(const LocalHttpServer&) = delete;

  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  void set_route(const std::string& path, Route route) {
    std::lock_guard<std::mutex> lock(mu_);
    routes_[path] = std::move(route);
  }

  std::vector<Seen> requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }

 private:
  static constexpr int kBacklog = 16;
  static constexpr size_t kMaxRequestHead = 64 * 1024;

  void serve() {
    while (!stopping_) {
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) {
        if (stopping_) return;
        continue;
      }
      handle(fd);
      ::shutdown(fd, SHUT_WR);
      ::close(fd);
    }
  }

  static bool send_all(int fd, const char* p, size_t n) {
    while (n > 0) {
      const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
      if (w <= 0) return false;
      p += w;
      n -= static_cast<size_t>(w);
    }
    return true;
  }

  static std::string header_value(const std::string& head, const std::string& name) {
    size_t pos = 0;
    while ((pos = head.find("\r\n", pos)) != std::string::npos) {
      pos += 2;
      const size_t colon = head.find(':', pos);
      const size_t eol = head.find("\r\n", pos);
      if (colon == std::string::npos || eol == std::string::npos || colon > eol) continue;
      std::string key = head.substr(pos, colon - pos);
      for (char& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (key == name) {
        size_t v = colon + 1;
        while (v < eol && head[v] == ' ') ++v;
        return head.substr(v, eol - v);
      }
    }
    return {};
  }

  void handle(int fd) {
    std::string head;
    char buf[4096];
    while (head.find("\r\n\r\n") == std::string::npos && head.size() < kMaxRequestHead) {
      const ssize_t r = ::recv(fd, buf, sizeof buf, 0);
      if (r <= 0) return;
      head.append(buf, static_cast<size_t>(r));
    }
    const size_t sp1 = head.find(' ');
    const size_t sp2 = head.find(' ', sp1 + 1);
    if (sp1 == std::string::npos || sp2 == std::string::npos) return;
    Seen seen{head.substr(sp1 + 1, sp2 - sp1 - 1), header_value(head, "range"), header_value(head, "authorization")};

    Route route;
    bool drop = false;
    bool found = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      seen_.push_back(seen);
      auto it = routes_.find(seen.path);
      if (it != routes_.end()) {
        found = true;
        route = it->second;
        if (it->second.drops > 0) {
          --it->second.drops;
          drop = true;
        }
      }
    }
    if (!found) {
      respond(fd, 404, {{"X-Error-Code", "EntryNotFound"}, {"X-Error-Message", "Entry not found"}}, "Entry not found",
              std::nullopt);
      return;
    }
    if (!route.redirect_to.empty()) {
      auto headers = route.headers;
      headers.emplace_back("Location", route.redirect_to);
      respond(fd, 302, headers, "", std::nullopt);
      return;
    }
    if (route.status != 200) {
      respond(fd, route.status, route.headers, route.body, std::nullopt);
      return;
    }
    const size_t size = route.body.size();
    size_t first = 0;
    auto headers = route.headers;
    int status = 200;
    if (route.honor_range && seen.range.rfind("bytes=", 0) == 0 && seen.range.back() == '-') {
      first = std::stoull(seen.range.substr(6, seen.range.size() - 7));
      if (first >= size) {
        headers.emplace_back("Content-Range", "bytes */" + std::to_string(size));
        respond(fd, 416, headers, "", std::nullopt);
        return;
      }
      status = 206;
      headers.emplace_back("Content-Range",
                           "bytes " + std::to_string(first) + "-" + std::to_string(size - 1) + "/" + std::to_string(size));
    }
    const std::string body = route.body.substr(first);
    respond(fd, status, headers, body, drop ? std::optional<size_t>(route.drop_after) : std::nullopt);
  }

  // Sends a response announcing body.size() bytes; with `cut`, only the first
  // *cut bytes of the body go out before the connection closes.
  static void respond(int fd, int status, const std::vector<std::pair<std::string, std::string>>& headers,
                      const std::string& body, std::optional<size_t> cut) {
    std::string head = "HTTP/1.1 " + std::to_string(status) + " X\r\n";
    head += "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n";
    for (const auto& [k, v] : headers) head += k + ": " + v + "\r\n";
    head += "\r\n";
    if (!send_all(fd, head.data(), head.size())) return;
    const size_t n = cut ? std::min(*cut, body.size()) : body.size();
    send_all(fd, body.data(), n);
  }

  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
  mutable std::mutex mu_;
  std::map<std::string, Route> routes_;
  std::vector<Seen> seen_;
};

}  // namespace ferrite::test
