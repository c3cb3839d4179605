// The model hub for Llama.from_pretrained: `ferrite pull` (hub/pull.h) and
// the repository listing (hub/hub_listing.h), with the environment's
// settings (hub/config.h: FERRITE_CACHE, FERRITE_HF_ENDPOINT, HF_TOKEN,
// FERRITE_OFFLINE). Downloads run with the GIL released.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdio>
#include <string>
#include <vector>

#include "hub/config.h"
#include "hub/hub_listing.h"
#include "hub/progress.h"
#include "hub/pull.h"
#include "hub/resolve.h"

namespace ferrite::python {
namespace py = pybind11;
namespace {

hub::HubConfig config_with_cache(const std::string& cache_dir) {
  hub::HubConfig config = hub::HubConfig::from_environment();
  if (!cache_dir.empty()) config.cache_dir = cache_dir;
  return config;
}

std::string pull(const std::string& ref, const std::string& cache_dir, bool quiet) {
  const hub::HubConfig config = config_with_cache(cache_dir);
  py::gil_scoped_release nogil;
  const hub::PullTarget target = hub::resolve_pull_target(ref, config);
  hub::PullOptions options;
  options.progress = quiet ? hub::ProgressMode::kSilent : hub::ProgressMode::kAuto;
  options.notify = [quiet](const std::string& line) {
    if (!quiet) std::fprintf(stderr, "ferrite: %s\n", line.c_str());
  };
  return hub::pull(target, config, options).path.string();
}

std::vector<std::string> repo_files(const std::string& repo, const std::string& revision) {
  hub::HfRepoQuant ref;
  ref.repo = repo;
  ref.revision = revision;
  const hub::HubConfig config = hub::HubConfig::from_environment();
  std::vector<hub::RepoFile> files;
  {
    py::gil_scoped_release nogil;
    files = hub::list_repo_files(ref, config);
  }
  std::vector<std::string> paths;
  paths.reserve(files.size());
  for (const hub::RepoFile& f : files) paths.push_back(f.path);
  return paths;
}

}  // namespace

void bind_hub(py::module_& m) {
  m.def("pull", &pull, py::arg("ref"), py::arg("cache_dir") = "", py::arg("quiet") = false,
        "Path of a model in the cache, downloaded first when missing (as `ferrite pull REF`: a known name, "
        "owner/repo[@rev][:QUANT] or owner/repo[@rev]:file.gguf).");
  m.def("list_repo_files", &repo_files, py::arg("repo"), py::arg("revision") = "main",
        "The paths of a hub repository's files.");
}

}  // namespace ferrite::python
