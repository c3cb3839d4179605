// `ferrite list [--json]`: the models on this machine (download cache and
// FERRITE_MODELS_PATH): name, size, type, architecture, date. A name in the
// first column works wherever a model is asked for (run NAME, show NAME, rm NAME).
#include <cstdio>
#include <ctime>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "command.h"
#include "hub/config.h"
#include "model_store.h"

namespace ferrite::tools {
namespace {

std::string date_text(std::time_t t) {
  if (t == 0) return "?";
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M", &tm);
  return buf;
}

int run_list(bool json) {
  const hub::HubConfig config = hub::HubConfig::from_environment();
  const std::vector<StoredModel> models = stored_models(config);
  if (json) {
    nlohmann::json out = nlohmann::json::array();
    for (const StoredModel& m : models) {
      out.push_back({{"name", m.name}, {"path", m.path.string()}, {"size", m.size}, {"type", m.type},
                     {"architecture", m.arch}, {"modified", static_cast<long long>(m.modified)},
                     {"source", m.in_cache ? "cache" : "models_path"}});
    }
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  if (models.empty()) {
    std::fprintf(stderr, "no models in %s%s (ferrite pull NAME downloads one)\n",
                 config.cache_dir.empty() ? "the cache" : config.cache_dir.string().c_str(),
                 config.models_path.empty() ? "" : " or FERRITE_MODELS_PATH");
    return 0;
  }
  size_t width = 4;
  for (const StoredModel& m : models) width = std::max(width, m.name.size());
  std::printf("%-*s  %10s  %-8s  %-10s  %s\n", static_cast<int>(width), "NAME", "SIZE", "TYPE", "ARCH", "MODIFIED");
  for (const StoredModel& m : models) {
    std::printf("%-*s  %10s  %-8s  %-10s  %s\n", static_cast<int>(width), m.name.c_str(), human_size(m.size).c_str(),
                m.type.c_str(), m.arch.c_str(), date_text(m.modified).c_str());
  }
  return 0;
}

const CommandRegistrar kList({"list", "List the models on this machine (cache and FERRITE_MODELS_PATH)",
                              [](CLI::App& sub) -> std::function<int()> {
                                auto json = std::make_shared<bool>(false);
                                sub.add_flag("--json", *json, "Print JSON");
                                return [json] { return run_list(*json); };
                              }});

}  // namespace
}  // namespace ferrite::tools
