#include "hub/resolve.h"

#include <algorithm>

#include "core/error.h"
#include "hub/errors.h"
#include "hub/hub_listing.h"
#include "hub/known_models.h"
#include "hub/model_ref.h"
#include "hub/pull.h"

namespace ferrite::hub {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kGgufSuffix = ".gguf";
constexpr int kCacheSearchDepth = 6;  // owner/repo/sub/folders/file

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// What to look for: relative names tried in each folder, and exact places in
// the cache.
struct Wanted {
  std::vector<std::string> names;
  std::vector<fs::path> cache_exact;
};

void add_name(Wanted& w, const std::string& name) {
  if (std::find(w.names.begin(), w.names.end(), name) == w.names.end()) w.names.push_back(name);
}

Wanted wanted_for(const std::string& arg, const HubConfig& config) {
  Wanted w;
  if (const auto target = looks_like_repo_quant(arg) ? std::nullopt : find_pull_target(arg)) {
    if (!looks_like_hf_file(arg)) {
      add_name(w, arg);
      if (!ends_with(arg, kGgufSuffix)) add_name(w, arg + std::string(kGgufSuffix));
    }
    add_name(w, fs::path(target->file.file).filename().string());
    if (!config.cache_dir.empty()) w.cache_exact.push_back(config.cache_dir / cache_relative_path(target->file));
    return w;
  }
  add_name(w, arg);
  if (!ends_with(arg, kGgufSuffix)) add_name(w, arg + std::string(kGgufSuffix));
  if (!config.cache_dir.empty()) {
    for (const std::string& n : w.names) w.cache_exact.push_back(config.cache_dir / n);
  }
  return w;
}

std::vector<fs::path> sorted_subfolders(const fs::path& dir) {
  std::vector<fs::path> subs;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code type_ec;
    if (it->is_directory(type_ec)) subs.push_back(it->path());
  }
  std::sort(subs.begin(), subs.end());
  return subs;
}

std::optional<fs::path> find_in_folder(const fs::path& dir, const std::vector<std::string>& names) {
  for (const std::string& n : names) {
    if (is_file(dir / n)) return dir / n;
  }
  for (const fs::path& sub : sorted_subfolders(dir)) {
    for (const std::string& n : names) {
      if (is_file(sub / n)) return sub / n;
    }
  }
  return std::nullopt;
}

// The first (in path order) file below `root` whose file name is one of
// `names`; .part files never match.
std::optional<fs::path> find_below(const fs::path& root, const std::vector<std::string>& names) {
  std::vector<fs::path> found;
  std::error_code ec;
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec);
  for (fs::recursive_directory_iterator end; !ec && it != end; it.increment(ec)) {
    if (it.depth() >= kCacheSearchDepth) it.disable_recursion_pending();
    const std::string fname = it->path().filename().string();
    if (std::find(names.begin(), names.end(), fname) != names.end() && is_file(it->path())) {
      found.push_back(it->path());
    }
  }
  if (found.empty()) return std::nullopt;
  return *std::min_element(found.begin(), found.end());
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

// owner/repo[:QUANT]: the cached GGUF of the repository that the quant rules
// pick among the files there.
std::optional<fs::path> find_cached_quant(const std::string& arg, const HubConfig& config) {
  if (config.cache_dir.empty()) return std::nullopt;
  const HfRepoQuant ref = parse_repo_quant(arg);
  HfFile probe{ref.repo, "x.gguf", ref.revision};
  const fs::path dir = config.cache_dir / cache_relative_path(probe).parent_path();
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return std::nullopt;
  std::vector<RepoFile> files;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
  for (fs::recursive_directory_iterator end; !ec && it != end; it.increment(ec)) {
    if (is_file(it->path())) files.push_back({fs::relative(it->path(), dir, ec).generic_string(), 0, ""});
  }
  try {
    return dir / pick_quant_file(files, ref).path;
  } catch (const InvalidArgument&) {
    return std::nullopt;  // not (unambiguously) here: ask the hub
  }
}

}  // namespace

PullTarget resolve_pull_target(const std::string& arg, const HubConfig& config) {
  if (!looks_like_repo_quant(arg)) return pull_target(arg);
  const HfRepoQuant ref = parse_repo_quant(arg);
  const RepoFile f = pick_quant_file(list_repo_files(ref, config), ref);
  return PullTarget{HfFile{ref.repo, f.path, ref.revision}, f.sha256, f.size};
}

std::optional<fs::path> find_local_model(const std::string& arg, const HubConfig& config,
                                         std::vector<std::string>* searched) {
  if (arg.empty()) throw InvalidArgument("empty model name");
  std::error_code ec;
  if (fs::is_directory(arg, ec)) {
    // A bare name that happens to be a folder here is still searched for.
    if (arg.find('/') != std::string::npos) throw InvalidArgument("'" + arg + "' is a folder, not a model file");
  } else if (fs::exists(arg, ec)) {
    return fs::path(arg);
  }
  if (searched) searched->push_back(fs::absolute(arg, ec).string() + " (as a path)");
  if (fs::path(arg).is_absolute()) return std::nullopt;

  const Wanted w = wanted_for(arg, config);
  for (const fs::path& dir : config.models_path) {
    if (searched) searched->push_back(dir.string() + " and its subfolders (FERRITE_MODELS_PATH)");
    if (auto p = find_in_folder(dir, w.names)) return p;
  }
  if (!config.cache_dir.empty()) {
    if (searched) searched->push_back(config.cache_dir.string() + " and below (download cache)");
    for (const fs::path& p : w.cache_exact) {
      if (is_file(p)) return p;
    }
    std::vector<std::string> plain;  // names that are file names, not paths
    for (const std::string& n : w.names) {
      if (n.find('/') == std::string::npos) plain.push_back(n);
    }
    if (!plain.empty()) {
      if (auto p = find_below(config.cache_dir, plain)) return p;
    }
    // owner/repo[:QUANT]: the repository's cached file of that quant.
    if (looks_like_repo_quant(arg)) return find_cached_quant(arg, config);
  }
  return std::nullopt;
}

fs::path resolve_model(const std::string& arg, const HubConfig& config, const ResolveOptions& options) {
  std::vector<std::string> searched;
  if (auto p = find_local_model(arg, config, &searched)) return *p;

  const bool can_download = options.allow_download && !config.offline && !config.cache_dir.empty();
  const bool repo_quant = looks_like_repo_quant(arg);
  if (repo_quant && can_download) {
    const PullTarget t = resolve_pull_target(arg, config);
    if (options.notify) {
      options.notify("model '" + arg + "' is not on this machine; downloading " + t.file.to_string() + " from " +
                     config.endpoint + " into " + config.cache_dir.string());
    }
    PullOptions po;
    po.progress = options.progress;
    po.notify = options.notify;
    return pull(t, config, po).path;
  }
  const std::optional<PullTarget> target = repo_quant ? std::nullopt : find_pull_target(arg);
  if (target && can_download) {
    if (options.notify) {
      options.notify("model '" + arg + "' is not on this machine; downloading " + target->file.to_string() +
                     (target->size ? " (" + format_bytes(target->size) + ")" : std::string()) + " from " +
                     config.endpoint + " into " + config.cache_dir.string());
    }
    PullOptions po;
    po.progress = options.progress;
    po.notify = options.notify;
    return pull(*target, config, po).path;
  }

  std::string msg = "model '" + arg + "' not found; looked for " +
                    (repo_quant ? "its GGUF file" : join(wanted_for(arg, config).names, ", ")) + " in:\n  " +
                    join(searched, "\n  ");
  if (config.models_path.empty()) msg += "\n(FERRITE_MODELS_PATH is not set: it lists the folders that hold your models)";
  if (target || repo_quant) {
    const char* why = config.offline ? "FERRITE_OFFLINE or HF_HUB_OFFLINE is set"
                      : config.cache_dir.empty() ? "no cache folder: set FERRITE_CACHE"
                                                 : "automatic download is disabled";
    msg += "\nnot downloaded (" + std::string(why) + "); get it with: ferrite pull " + arg;
  } else {
    std::string names;
    for (const KnownModel& m : known_models()) names += (names.empty() ? "" : ", ") + std::string(m.name);
    msg += "\nto download a model: ferrite pull OWNER/REPO[:QUANT] or OWNER/REPO:FILE.gguf (or a known name: " + names +
           ")";
  }
  throw ModelNotFound(msg);
}

}  // namespace ferrite::hub
