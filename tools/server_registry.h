// Running `ferrite serve` processes on this machine, for `ferrite ps`: each
// server writes one small JSON file (its pid, address, model) into
// <cache>/servers while it listens and removes it when it exits; `ps` lists
// the files whose process is still a live ferrite and drops the others
// (left by a server that was killed).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace ferrite::tools {

struct ServerEntry {
  int pid = 0;
  std::string host;
  int port = 0;
  std::string model;       // the id the API reports
  std::string model_path;
  int parallel = 0;
  long long n_ctx = 0;
  long long started = 0;   // unix time
};

// The folder of the entries (<cache>/servers); empty without a cache folder.
std::filesystem::path server_registry_dir();

// Writes this process's entry; the returned guard removes it. Failing to
// write is not an error (the server serves anyway): the guard then holds "".
class ServerRegistration {
 public:
  explicit ServerRegistration(const ServerEntry& e);
  ~ServerRegistration();
  ServerRegistration(const ServerRegistration&) = delete;
  ServerRegistration& operator=(const ServerRegistration&) = delete;

 private:
  std::filesystem::path file_;
};

// The entries of live servers, oldest first; stale files are removed.
std::vector<ServerEntry> running_servers(const std::filesystem::path& dir);

}  // namespace ferrite::tools
