// `ferrite rm NAME...`: deletes models from the download cache (a file in a
// FERRITE_MODELS_PATH folder or elsewhere is yours to delete: refused), with
// an unfinished .part download of it, and the folders it leaves empty.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "command.h"
#include "core/error.h"
#include "hub/config.h"
#include "hub/download.h"
#include "hub/resolve.h"
#include "model_store.h"

namespace ferrite::tools {
namespace {

namespace fs = std::filesystem;

bool inside(const fs::path& file, const fs::path& dir) {
  std::error_code ec;
  const fs::path f = fs::weakly_canonical(file, ec);
  const fs::path d = fs::weakly_canonical(dir, ec);
  const fs::path rel = f.lexically_relative(d);
  return !rel.empty() && rel != "." && *rel.begin() != ".." && !rel.is_absolute();
}

int run_rm(const std::vector<std::string>& names) {
  const hub::HubConfig config = hub::HubConfig::from_environment();
  if (config.cache_dir.empty()) throw InvalidArgument("rm: no cache folder (set FERRITE_CACHE)");
  for (const std::string& name : names) {
    const std::optional<fs::path> p = hub::find_local_model(name, config);
    if (!p) throw InvalidArgument("rm: no model '" + name + "' on this machine (`ferrite list` shows them)");
    if (!inside(*p, config.cache_dir)) {
      throw InvalidArgument("rm: " + p->string() + " is not in the download cache (" + config.cache_dir.string() +
                            "); delete it yourself");
    }
    const uint64_t size = fs::file_size(*p);
    fs::remove(*p);
    std::error_code ec;
    fs::remove(hub::partial_path(*p), ec);
    // Folders the file leaves empty, up to the cache folder.
    for (fs::path dir = p->parent_path(); inside(dir, config.cache_dir) && fs::is_empty(dir, ec) && !ec;
         dir = dir.parent_path()) {
      fs::remove(dir, ec);
    }
    std::printf("removed %s (%s)\n", p->string().c_str(), human_size(size).c_str());
  }
  return 0;
}

const CommandRegistrar kRm({"rm", "Delete models from the download cache",
                            [](CLI::App& sub) -> std::function<int()> {
                              auto names = std::make_shared<std::vector<std::string>>();
                              sub.add_option("name", *names, "Model names as `ferrite list` shows them")->required();
                              return [names] { return run_rm(*names); };
                            }});

}  // namespace
}  // namespace ferrite::tools
