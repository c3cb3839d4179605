#include "hub/pull.h"

#include <cctype>

#include "core/error.h"
#include "hub/known_models.h"

namespace ferrite::hub {
namespace {

std::string lower_hex(const std::string& s) {
  std::string out = s;
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool is_sha256_hex(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

std::string known_names() {
  std::string names;
  for (const KnownModel& m : known_models()) names += (names.empty() ? "" : ", ") + std::string(m.name);
  return names;
}

}  // namespace

std::optional<PullTarget> find_pull_target(const std::string& name_or_ref) {
  if (const KnownModel* m = find_known_model(name_or_ref)) {
    return PullTarget{m->hf_file(), std::string(m->sha256), m->size};
  }
  if (looks_like_hf_file(name_or_ref)) return PullTarget{parse_hf_file(name_or_ref), "", 0};
  return std::nullopt;
}

PullTarget pull_target(const std::string& name_or_ref) {
  if (auto t = find_pull_target(name_or_ref)) return *t;
  throw InvalidArgument("'" + name_or_ref + "' is neither a known model name (" + known_names() +
                        ") nor a Hugging Face file (owner/repo:file.gguf)");
}

std::filesystem::path cache_path(const PullTarget& target, const HubConfig& config) {
  if (config.cache_dir.empty()) {
    throw InvalidArgument("no cache folder for downloads: set FERRITE_CACHE (or HOME)");
  }
  return config.cache_dir / cache_relative_path(target.file);
}

PullResult pull(const PullTarget& target, const HubConfig& config, const PullOptions& options) {
  PullResult result;
  result.path = cache_path(target, config);
  std::string sha = lower_hex(target.sha256);
  if (!options.expected_sha256.empty()) {
    const std::string want = lower_hex(options.expected_sha256);
    if (!is_sha256_hex(want)) throw InvalidArgument("--sha256 wants 64 hexadecimal digits, got '" + want + "'");
    if (!sha.empty() && sha != want) {
      throw InvalidArgument("the given SHA-256 " + want + " differs from the known one for " +
                            target.file.to_string() + " (" + sha + ")");
    }
    sha = want;
  }
  std::error_code ec;
  if (!options.force && std::filesystem::is_regular_file(result.path, ec)) return result;

  DownloadSpec spec;
  spec.url = hf_resolve_url(config.endpoint, target.file);
  spec.destination = result.path;
  spec.bearer_token = config.token;
  spec.expected_sha256 = sha;
  spec.expected_size = target.size;
  spec.max_attempts = options.max_attempts;
  spec.progress = options.progress;
  spec.notify = options.notify;
  spec.offline = config.offline;
  result.download = download_file(spec);
  result.downloaded = true;
  return result;
}

}  // namespace ferrite::hub
