// The models on this machine, as `ferrite list`, `show` and `rm` see them:
// every GGUF file in the download cache and in the FERRITE_MODELS_PATH
// folders (and their immediate subfolders, where names resolve), each with
// the name that resolves to it, its size, type, architecture and date.
#pragma once

#include <cstdint>
#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

#include "hub/config.h"

namespace ferrite::tools {

struct StoredModel {
  std::filesystem::path path;
  std::string name;       // resolves to this file: "owner/repo:file.gguf" in the cache, else the file name
  bool in_cache = false;  // else in a FERRITE_MODELS_PATH folder
  uint64_t size = 0;      // bytes of the file
  std::string type;       // "Q4_K_M" (general.file_type), or the main tensor type; "?" when unreadable
  std::string arch;       // general.architecture; "?" when unreadable
  std::time_t modified = 0;
};

// Every model, cache first, each group sorted by name. Unreadable files are
// listed with "?" fields rather than failing the listing.
std::vector<StoredModel> stored_models(const hub::HubConfig& config);

// The file type name of a GGUF file ("Q4_K_M"), from general.file_type or
// else the type most of its tensor bytes have. Throws what opening throws.
std::string model_type_name(const std::filesystem::path& path, std::string* arch = nullptr);

// "1.2 GiB", "640 KiB".
std::string human_size(uint64_t bytes);

}  // namespace ferrite::tools
