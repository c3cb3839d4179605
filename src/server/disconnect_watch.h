// Notices clients that hang up while their request is being served, so the
// engine can free their slot at once instead of when it next writes to them.
// One thread poll()s the watched connections for a peer shutdown (POLLRDHUP)
// and a self-pipe for changes to the set.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

namespace ferrite::server {

class DisconnectWatch {
 public:
  DisconnectWatch();
  ~DisconnectWatch();
  DisconnectWatch(const DisconnectWatch&) = delete;
  DisconnectWatch& operator=(const DisconnectWatch&) = delete;

  // Watches socket `fd` until unwatch(); `on_close` runs once (on the watch
  // thread, under the watch's lock: keep it short and non-blocking) when the
  // peer closes. Returns a handle for unwatch(), or 0 when fd < 0.
  uint64_t watch(int fd, std::function<void()> on_close);
  void unwatch(uint64_t handle);

  // The server-side socket of the TCP connection between local port `local`
  // and the peer at port `remote`, found among this process's descriptors;
  // -1 when none matches.
  static int find_connection(int local_port, int remote_port);

 private:
  struct Entry {
    int fd;
    std::function<void()> on_close;
    bool fired = false;
  };
  void loop();
  void wake();

  std::mutex mu_;
  std::map<uint64_t, Entry> entries_;
  uint64_t next_ = 1;
  bool stop_ = false;
  int pipe_[2] = {-1, -1};
  std::thread thread_;
};

// Watches a connection for the lifetime of the guard.
class WatchGuard {
 public:
  WatchGuard(DisconnectWatch& w, uint64_t handle) : w_(w), h_(handle) {}
  ~WatchGuard() {
    if (h_) w_.unwatch(h_);
  }
  WatchGuard(const WatchGuard&) = delete;
  WatchGuard& operator=(const WatchGuard&) = delete;

 private:
  DisconnectWatch& w_;
  uint64_t h_;
};

}  // namespace ferrite::server
