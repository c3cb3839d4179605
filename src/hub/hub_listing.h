// A repository's GGUF files by quantization tag, for `owner/repo[:QUANT]`
// (llama.cpp's -hf spelling): the hub lists the repository's files
// (GET <endpoint>/api/models/<owner>/<repo>/tree/<revision>?recursive=true,
// a JSON array of {"type", "path", "size"}), and the file whose name carries
// the tag is chosen. Without a tag, Q4_K_M when the repository has it (as
// llama.cpp picks), else its only GGUF file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hub/config.h"
#include "hub/model_ref.h"

namespace ferrite::hub {

// `owner/repo` or `owner/repo:TAG` where TAG is no file name (no ".gguf", no '/').
struct HfRepoQuant {
  std::string repo;               // "owner/name"
  std::string quant;              // "Q4_K_M"; empty: the default choice
  std::string revision = "main";
};

// True when `arg` has that shape (an `owner/repo:file.gguf` does not).
bool looks_like_repo_quant(const std::string& arg);
// Throws InvalidArgument for a malformed one.
HfRepoQuant parse_repo_quant(const std::string& arg);

struct RepoFile {
  std::string path;
  uint64_t size = 0;
  std::string sha256;  // the LFS object id when the listing gives one (lower-case hex)
};

// The repository's files, from the hub. Throws HttpError / NetworkError.
std::vector<RepoFile> list_repo_files(const HfRepoQuant& ref, const HubConfig& config);

// The quantization tag of a GGUF file name ("model-Q4_K_M.gguf" -> "Q4_K_M";
// "" when it has none we know).
std::string quant_tag(const std::string& file_name);

// The file for the reference among `files` (GGUF files only; a model split
// in parts picks its first part). Throws InvalidArgument naming the tags the
// repository has when none matches.
RepoFile pick_quant_file(const std::vector<RepoFile>& files, const HfRepoQuant& ref);

}  // namespace ferrite::hub
