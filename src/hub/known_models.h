// Short names for a few well-known small models, so that
// `ferrite run stories260K` works on a fresh machine. Each maps to a file on
// the Hugging Face hub, with its SHA-256 and size where public sources give
// them (checked on download; the hub's own X-Linked-Etag is checked too).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "hub/model_ref.h"

namespace ferrite::hub {

struct KnownModel {
  std::string_view name;         // short name, matched case-insensitively, ".gguf" optional
  std::string_view repo;         // "owner/name" on the hub
  std::string_view file;         // path inside the repository
  std::string_view sha256;       // lower-case hex, empty when unknown
  uint64_t size;                 // bytes, 0 when unknown
  std::string_view description;  // one line for `ferrite pull --list`

  HfFile hf_file() const { return HfFile{std::string(repo), std::string(file), "main"}; }
};

std::span<const KnownModel> known_models();

// The entry for `name` ("stories260K", "stories260k.gguf"), or nullptr.
const KnownModel* find_known_model(std::string_view name);

}  // namespace ferrite::hub
