// `ferrite pull NAME | OWNER/REPO[:QUANT] | OWNER/REPO:FILE.gguf`: downloads a
// model into the cache (resumable, size and SHA-256 checked) and prints its
// path. OWNER/REPO[:QUANT] picks the repository's GGUF file of that quant
// type from the hub's file listing (default Q4_K_M, as llama.cpp's -hf).
#include <cstdio>
#include <memory>
#include <string>

#include "command.h"
#include "core/error.h"
#include "hub/config.h"
#include "hub/known_models.h"
#include "hub/progress.h"
#include "hub/pull.h"
#include "hub/resolve.h"

namespace ferrite::tools {
namespace {

struct PullCommandOptions {
  std::string model;
  std::string sha256;
  bool force = false;
  bool quiet = false;
  bool list = false;
};

int list_known() {
  for (const hub::KnownModel& m : hub::known_models()) {
    std::printf("%-18s %s:%s\n%-18s %s\n", std::string(m.name).c_str(), std::string(m.repo).c_str(),
                std::string(m.file).c_str(), "", std::string(m.description).c_str());
  }
  return 0;
}

int run_pull(const PullCommandOptions& opt) {
  if (opt.list) return list_known();
  if (opt.model.empty()) {
    throw InvalidArgument("pull: give a model name, owner/repo[:QUANT] or owner/repo:file.gguf (or --list)");
  }
  const hub::HubConfig config = hub::HubConfig::from_environment();
  const hub::PullTarget target = hub::resolve_pull_target(opt.model, config);
  hub::PullOptions po;
  po.force = opt.force;
  po.expected_sha256 = opt.sha256;
  po.progress = opt.quiet ? hub::ProgressMode::kSilent : hub::ProgressMode::kAuto;
  po.notify = [&opt](const std::string& line) {
    if (!opt.quiet) std::fprintf(stderr, "ferrite: %s\n", line.c_str());
  };
  if (!opt.quiet) {
    std::fprintf(stderr, "ferrite: pulling %s from %s\n", target.file.to_string().c_str(), config.endpoint.c_str());
  }
  const hub::PullResult r = hub::pull(target, config, po);
  if (!opt.quiet) {
    if (r.downloaded) {
      std::fprintf(stderr, "ferrite: %s, sha256 %s\n", hub::format_bytes(r.download.size).c_str(),
                   r.download.sha256.empty() ? "(checked elsewhere)" : r.download.sha256.c_str());
    } else {
      std::fprintf(stderr, "ferrite: already in the cache (--force downloads it again)\n");
    }
  }
  std::printf("%s\n", r.path.string().c_str());
  return 0;
}

const CommandRegistrar kPull({"pull", "Download a model (known name, owner/repo[:QUANT] or owner/repo:file.gguf) into the cache",
                              [](CLI::App& sub) -> std::function<int()> {
                                auto opt = std::make_shared<PullCommandOptions>();
                                sub.add_option("model", opt->model,
                                               "Known name (stories260K), owner/repo[:QUANT] (default Q4_K_M) or "
                                               "owner/repo:file.gguf");
                                sub.add_option("--sha256", opt->sha256, "Expected SHA-256 of the file (hex)");
                                sub.add_flag("-f,--force", opt->force, "Download again even if already cached");
                                sub.add_flag("-q,--quiet", opt->quiet, "No progress or notices; print only the path");
                                sub.add_flag("--list", opt->list, "List the known model names");
                                return [opt] { return run_pull(*opt); };
                              }});

}  // namespace
}  // namespace ferrite::tools
