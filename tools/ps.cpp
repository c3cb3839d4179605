// `ferrite ps [--json]`: the `ferrite serve` processes running on this
// machine (server_registry.h): pid, address, model, slots, uptime.
#include <cstdio>
#include <ctime>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "command.h"
#include "server_registry.h"

namespace ferrite::tools {
namespace {

std::string uptime_text(long long started) {
  const long long s = started > 0 ? static_cast<long long>(std::time(nullptr)) - started : 0;
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", s / 3600, s % 3600 / 60);
  } else {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
  }
  return buf;
}

int run_ps(bool json) {
  const std::vector<ServerEntry> servers = running_servers(server_registry_dir());
  if (json) {
    nlohmann::json out = nlohmann::json::array();
    for (const ServerEntry& e : servers) {
      out.push_back({{"pid", e.pid}, {"url", "http://" + e.host + ":" + std::to_string(e.port)}, {"model", e.model},
                     {"model_path", e.model_path}, {"parallel", e.parallel}, {"n_ctx", e.n_ctx},
                     {"started", e.started}});
    }
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  if (servers.empty()) {
    std::fprintf(stderr, "no ferrite servers running\n");
    return 0;
  }
  std::printf("%-8s  %-26s  %-30s  %5s  %7s  %s\n", "PID", "URL", "MODEL", "SLOTS", "CONTEXT", "UP");
  for (const ServerEntry& e : servers) {
    const std::string url = "http://" + e.host + ":" + std::to_string(e.port);
    std::printf("%-8d  %-26s  %-30s  %5d  %7lld  %s\n", e.pid, url.c_str(), e.model.c_str(), e.parallel, e.n_ctx,
                uptime_text(e.started).c_str());
  }
  return 0;
}

const CommandRegistrar kPs({"ps", "List the ferrite servers running on this machine",
                            [](CLI::App& sub) -> std::function<int()> {
                              auto json = std::make_shared<bool>(false);
                              sub.add_flag("--json", *json, "Print JSON");
                              return [json] { return run_ps(*json); };
                            }});

}  // namespace
}  // namespace ferrite::tools
