#include "server/disconnect_watch.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.h"

namespace ferrite::server {
namespace {

int port_of(const sockaddr_storage& a) {
  if (a.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(a).sin_port);
  if (a.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6&>(a).sin6_port);
  return -1;
}

}  // namespace

DisconnectWatch::DisconnectWatch() {
  if (::pipe2(pipe_, O_CLOEXEC | O_NONBLOCK) != 0) throw IoError("pipe", "cannot create the watch pipe");
  thread_ = std::thread([this] { loop(); });
}

DisconnectWatch::~DisconnectWatch() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake();
  thread_.join();
  ::close(pipe_[0]);
  ::close(pipe_[1]);
}

void DisconnectWatch::wake() {
  const char c = 1;
  [[maybe_unused]] ssize_t n = ::write(pipe_[1], &c, 1);  // a full pipe already wakes the loop
}

uint64_t DisconnectWatch::watch(int fd, std::function<void()> on_close) {
  if (fd < 0) return 0;
  uint64_t h = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    h = next_++;
    entries_.emplace(h, Entry{fd, std::move(on_close)});
  }
  wake();
  return h;
}

void DisconnectWatch::unwatch(uint64_t handle) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    entries_.erase(handle);
  }
  wake();
}

void DisconnectWatch::loop() {
  std::vector<pollfd> fds;
  std::vector<uint64_t> ids;
  for (;;) {
    fds.clear();
    ids.clear();
    fds.push_back({pipe_[0], POLLIN, 0});
    ids.push_back(0);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
      for (const auto& [id, e] : entries_) {
        if (e.fired) continue;
        fds.push_back({e.fd, POLLRDHUP, 0});
        ids.push_back(id);
      }
    }
    if (::poll(fds.data(), fds.size(), -1) < 0) continue;  // EINTR
    if (fds[0].revents & POLLIN) {
      char buf[64];
      while (::read(pipe_[0], buf, sizeof buf) > 0) {
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 1; i < fds.size(); ++i) {
      if (!(fds[i].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL))) continue;
      auto it = entries_.find(ids[i]);
      if (it == entries_.end() || it->second.fired || it->second.fd != fds[i].fd) continue;
      it->second.fired = true;
      it->second.on_close();
    }
  }
}

int DisconnectWatch::find_connection(int local_port, int remote_port) {
  if (local_port <= 0 || remote_port <= 0) return -1;
  DIR* dir = ::opendir("/proc/self/fd");
  if (!dir) return -1;
  int found = -1;
  while (dirent* d = ::readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(d->d_name, &end, 10);
    if (end == d->d_name || *end != '\0' || fd == ::dirfd(dir)) continue;
    sockaddr_storage local{}, peer{};
    socklen_t ll = sizeof local, pl = sizeof peer;
    if (::getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&local), &ll) != 0) continue;
    if (::getpeername(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&peer), &pl) != 0) continue;
    if (port_of(local) == local_port && port_of(peer) == remote_port) {
      found = static_cast<int>(fd);
      break;
    }
  }
  ::closedir(dir);
  return found;
}

}  // namespace ferrite::server
