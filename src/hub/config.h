// Where models are looked for and where downloads go, read from the
// environment once and passed explicitly everywhere else (so tests can build
// their own):
//   FERRITE_MODELS_PATH  colon-separated folders searched for models by name
//   FERRITE_CACHE        the download cache (else $XDG_CACHE_HOME/ferrite,
//                        else ~/.cache/ferrite)
//   FERRITE_HF_ENDPOINT  base URL of the Hugging Face hub (else HF_ENDPOINT,
//                        else https://huggingface.co)
//   HF_TOKEN             bearer token for gated or private repositories
//   FERRITE_OFFLINE=1 (or HF_HUB_OFFLINE=1)  never download automatically
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace ferrite::hub {

inline constexpr const char* kDefaultEndpoint = "https://huggingface.co";

struct HubConfig {
  std::vector<std::filesystem::path> models_path;
  std::filesystem::path cache_dir;  // empty when no home directory can be found
  std::string endpoint = kDefaultEndpoint;
  std::string token;
  bool offline = false;

  static HubConfig from_environment();
};

// Splits a colon-separated list of folders, dropping empty entries.
std::vector<std::filesystem::path> split_search_path(const std::string& list);

// The cache folder the environment selects (see above); empty if none.
std::filesystem::path default_cache_dir();

}  // namespace ferrite::hub
