// Turns a model argument into a file path:
//  1. an existing path is used as is;
//  2. otherwise the name is looked up in each FERRITE_MODELS_PATH folder and
//     its immediate subfolders, as NAME and NAME.gguf (a known short name also
//     by its file name, an owner/repo:file reference by the file's name);
//  3. then in the download cache: the exact place of a known name or
//     reference, then any file of that name below the cache folder;
//  4. then, for a known short name, an owner/repo:file reference or an
//     owner/repo[:QUANT] one (hub_listing.h; in the cache: the repository's
//     file of that quant), and unless downloading is off, it is downloaded
//     into the cache (pull.h).
// Otherwise ModelNotFound lists every place searched and how to get the model.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "hub/config.h"
#include "hub/progress.h"
#include "hub/pull.h"

namespace ferrite::hub {

// Steps 1-3. `searched` (optional) receives one line per place looked in.
std::optional<std::filesystem::path> find_local_model(const std::string& arg, const HubConfig& config,
                                                      std::vector<std::string>* searched = nullptr);

struct ResolveOptions {
  bool allow_download = true;
  ProgressMode progress = ProgressMode::kAuto;
  std::function<void(const std::string&)> notify;  // "downloading ..." and download notices
};

// What `ferrite pull ARG` fetches: a known name, `owner/repo[@rev]:file`, or
// `owner/repo[@rev][:QUANT]` (the repository's GGUF file of that quant type,
// from the hub's file listing: hub_listing.h). Throws InvalidArgument for
// anything else, a download error when the listing cannot be had.
PullTarget resolve_pull_target(const std::string& arg, const HubConfig& config);

// Steps 1-4; throws ModelNotFound, or a download error.
std::filesystem::path resolve_model(const std::string& arg, const HubConfig& config,
                                    const ResolveOptions& options = {});

}  // namespace ferrite::hub
