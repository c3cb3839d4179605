#include "server_registry.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "hub/config.h"

namespace ferrite::tools {
namespace {

constexpr const char* kFolder = "servers";
constexpr std::streamoff kMaxEntryBytes = 64 * 1024;

// Whether `pid` is a live process running a ferrite binary.
bool live_ferrite(int pid) {
  if (pid <= 0) return false;
  if (::kill(pid, 0) != 0 && errno != EPERM) return false;
  std::ifstream cmd("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  if (!cmd) return true;  // no /proc: trust the pid
  std::string argv0;
  std::getline(cmd, argv0, '\0');
  return std::filesystem::path(argv0).filename().string().find("ferrite") != std::string::npos;
}

bool read_entry(const std::filesystem::path& file, ServerEntry& e) {
  std::ifstream in(file, std::ios::binary | std::ios::ate);
  if (!in || in.tellg() > kMaxEntryBytes) return false;
  in.seekg(0);
  std::ostringstream ss;
  ss << in.rdbuf();
  const nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, false);
  if (!j.is_object()) return false;
  try {
    e.pid = j.at("pid").get<int>();
    e.host = j.value("host", "");
    e.port = j.value("port", 0);
    e.model = j.value("model", "");
    e.model_path = j.value("model_path", "");
    e.parallel = j.value("parallel", 0);
    e.n_ctx = j.value("n_ctx", 0LL);
    e.started = j.value("started", 0LL);
  } catch (const nlohmann::json::exception&) {
    return false;
  }
  return true;
}

}  // namespace

std::filesystem::path server_registry_dir() {
  const std::filesystem::path cache = hub::HubConfig::from_environment().cache_dir;
  return cache.empty() ? cache : cache / kFolder;
}

ServerRegistration::ServerRegistration(const ServerEntry& e) {
  const std::filesystem::path dir = server_registry_dir();
  if (dir.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return;
  const nlohmann::json j = {{"pid", e.pid},         {"host", e.host},     {"port", e.port},
                            {"model", e.model},     {"model_path", e.model_path},
                            {"parallel", e.parallel}, {"n_ctx", e.n_ctx}, {"started", e.started}};
  const std::filesystem::path file = dir / (std::to_string(e.pid) + ".json");
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << j.dump() << '\n';
  if (out) file_ = file;
}

ServerRegistration::~ServerRegistration() {
  if (file_.empty()) return;
  std::error_code ec;
  std::filesystem::remove(file_, ec);
}

std::vector<ServerEntry> running_servers(const std::filesystem::path& dir) {
  std::vector<ServerEntry> out;
  std::error_code ec;
  if (dir.empty() || !std::filesystem::is_directory(dir, ec)) return out;
  for (const auto& f : std::filesystem::directory_iterator(dir, ec)) {
    if (f.path().extension() != ".json") continue;
    ServerEntry e;
    if (read_entry(f.path(), e) && live_ferrite(e.pid)) {
      out.push_back(e);
    } else {
      std::error_code rm;
      std::filesystem::remove(f.path(), rm);  // a server that did not clean up
    }
  }
  std::sort(out.begin(), out.end(), [](const ServerEntry& a, const ServerEntry& b) { return a.started < b.started; });
  return out;
}

}  // namespace ferrite::tools
