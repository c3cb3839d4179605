// `ferrite pull`: puts a model file from the Hugging Face hub into the cache
// folder (<cache>/<owner>/<repo>/<file>), unless it is already there.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "hub/config.h"
#include "hub/download.h"
#include "hub/model_ref.h"
#include "hub/progress.h"

namespace ferrite::hub {

struct PullTarget {
  HfFile file;
  std::string sha256;  // expected, lower-case hex; empty when unknown
  uint64_t size = 0;   // expected bytes; 0 when unknown
};

// The target a known short name or an `owner/repo[@rev]:file` names, or
// nullopt for anything else. Throws InvalidArgument for a malformed reference.
std::optional<PullTarget> find_pull_target(const std::string& name_or_ref);

// Same, but throws InvalidArgument (listing the known names) for anything else.
PullTarget pull_target(const std::string& name_or_ref);

// Where `target` is (or would be) in the cache; throws InvalidArgument when
// no cache folder is configured.
std::filesystem::path cache_path(const PullTarget& target, const HubConfig& config);

struct PullOptions {
  bool force = false;             // download again even if cached
  std::string expected_sha256;    // in addition to the target's own
  ProgressMode progress = ProgressMode::kAuto;
  int max_attempts = 5;
  std::function<void(const std::string&)> notify;
};

struct PullResult {
  std::filesystem::path path;
  bool downloaded = false;  // false: it was already in the cache
  DownloadResult download;  // when downloaded
};

PullResult pull(const PullTarget& target, const HubConfig& config, const PullOptions& options);

}  // namespace ferrite::hub
