#include "hub/config.h"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>

namespace ferrite::hub {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

bool env_true(const char* name) {
  const std::string v = env(name);
  return !v.empty() && v != "0" && v != "false" && v != "no";
}

std::filesystem::path home_dir() {
  if (std::string h = env("HOME"); !h.empty()) return h;
  // No $HOME (some service environments): ask the password database.
  const long hint = sysconf(_SC_GETPW_R_SIZE_MAX);
  std::string buf(hint > 0 ? static_cast<size_t>(hint) : 16384, '\0');
  passwd pw{};
  passwd* found = nullptr;
  if (getpwuid_r(getuid(), &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr &&
      found->pw_dir != nullptr && *found->pw_dir != '\0') {
    return found->pw_dir;
  }
  return {};
}

}  // namespace

std::vector<std::filesystem::path> split_search_path(const std::string& list) {
  std::vector<std::filesystem::path> dirs;
  size_t begin = 0;
  while (begin <= list.size()) {
    size_t end = list.find(':', begin);
    if (end == std::string::npos) end = list.size();
    if (end > begin) dirs.emplace_back(list.substr(begin, end - begin));
    begin = end + 1;
  }
  return dirs;
}

std::filesystem::path default_cache_dir() {
  if (std::string c = env("FERRITE_CACHE"); !c.empty()) return c;
  if (std::string x = env("XDG_CACHE_HOME"); !x.empty()) return std::filesystem::path(x) / "ferrite";
  const std::filesystem::path home = home_dir();
  if (home.empty()) return {};
  return home / ".cache" / "ferrite";
}

HubConfig HubConfig::from_environment() {
  HubConfig c;
  c.models_path = split_search_path(env("FERRITE_MODELS_PATH"));
  c.cache_dir = default_cache_dir();
  if (std::string e = env("FERRITE_HF_ENDPOINT"); !e.empty()) {
    c.endpoint = e;
  } else if (std::string h = env("HF_ENDPOINT"); !h.empty()) {
    c.endpoint = h;
  }
  while (c.endpoint.size() > 1 && c.endpoint.back() == '/') c.endpoint.pop_back();
  c.token = env("HF_TOKEN");
  c.offline = env_true("FERRITE_OFFLINE") || env_true("HF_HUB_OFFLINE");
  return c;
}

}  // namespace ferrite::hub
