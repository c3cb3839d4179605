// A file in a Hugging Face repository, written `owner/repo:path/in/repo.gguf`
// (optionally `owner/repo@revision:path`), and where it lives on the hub and
// in the local cache.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace ferrite::hub {

struct HfFile {
  std::string repo;               // "owner/name"
  std::string file;               // path inside the repository, '/'-separated
  std::string revision = "main";  // branch, tag or commit

  // "owner/repo:file", with "@revision" when it is not main.
  std::string to_string() const;
};

// True when `arg` has the shape `owner/repo[@rev]:file` (it may still be
// invalid; parse_hf_file says why).
bool looks_like_hf_file(const std::string& arg);

// Parses `owner/repo[@rev]:file`. Throws InvalidArgument when a part is
// missing or would escape the cache folder ("..", absolute paths, control
// characters).
HfFile parse_hf_file(const std::string& arg);

// <endpoint>/<repo>/resolve/<revision>/<file>, percent-encoded.
std::string hf_resolve_url(const std::string& endpoint, const HfFile& f);

// Where the file is kept under the cache folder: owner/repo[@rev]/file.
std::filesystem::path cache_relative_path(const HfFile& f);

// Percent-encodes everything but unreserved characters and '/'.
std::string url_encode_path(const std::string& s);

}  // namespace ferrite::hub
