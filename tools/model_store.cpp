#include "model_store.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "core/error.h"
#include "gguf/file.h"
#include "gguf/metadata.h"
#include "quant/mix.h"

namespace ferrite::tools {
namespace {

namespace fs = std::filesystem;

bool is_gguf_file(const fs::directory_entry& e) {
  std::error_code ec;
  if (!e.is_regular_file(ec)) return false;
  const std::string name = e.path().filename().string();
  return name.size() > 5 && name.compare(name.size() - 5, 5, ".gguf") == 0;
}

std::time_t mtime(const fs::path& p) {
  std::error_code ec;
  const auto t = fs::last_write_time(p, ec);
  if (ec) return 0;
  const auto sys = std::chrono::time_point_cast<std::chrono::system_clock::duration>(
      t - fs::file_time_type::clock::now() + std::chrono::system_clock::now());
  return std::chrono::system_clock::to_time_t(sys);
}

StoredModel describe(const fs::path& path, std::string name, bool in_cache) {
  StoredModel m;
  m.path = path;
  m.name = std::move(name);
  m.in_cache = in_cache;
  std::error_code ec;
  m.size = fs::file_size(path, ec);
  m.modified = mtime(path);
  try {
    m.type = model_type_name(path, &m.arch);
  } catch (const Error&) {
    m.type = m.arch = "?";
  }
  return m;
}

// cache/owner/repo[@rev]/path/in/repo.gguf -> "owner/repo[@rev]:path/in/repo.gguf".
std::string cache_name(const fs::path& rel) {
  std::vector<std::string> parts;
  for (const fs::path& p : rel) parts.push_back(p.string());
  if (parts.size() < 3) return rel.generic_string();
  std::string file;
  for (size_t i = 2; i < parts.size(); ++i) file += (file.empty() ? "" : "/") + parts[i];
  return parts[0] + "/" + parts[1] + ":" + file;
}

}  // namespace

std::string human_size(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

std::string model_type_name(const fs::path& path, std::string* arch) {
  const gguf::File file = gguf::File::open(path.string());
  const gguf::Metadata md(file);
  if (arch != nullptr) *arch = md.opt_string("general.architecture").value_or("?");
  if (const auto ft = md.opt_uint("general.file_type")) {
    for (const quant::Preset& p : quant::presets()) {
      if (p.file_type == *ft) return p.name;
    }
  }
  std::map<TensorType, uint64_t> bytes;
  for (const gguf::TensorInfo& t : file.tensors()) bytes[t.type] += t.n_bytes;
  if (bytes.empty()) return "vocab";
  const auto most = std::max_element(bytes.begin(), bytes.end(),
                                     [](const auto& a, const auto& b) { return a.second < b.second; });
  return tensor_type_name(most->first);
}

std::vector<StoredModel> stored_models(const hub::HubConfig& config) {
  std::vector<StoredModel> cache, local;
  std::error_code ec;
  if (!config.cache_dir.empty() && fs::is_directory(config.cache_dir, ec)) {
    fs::recursive_directory_iterator it(config.cache_dir, fs::directory_options::skip_permission_denied, ec);
    for (fs::recursive_directory_iterator end; !ec && it != end; it.increment(ec)) {
      if (!is_gguf_file(*it)) continue;
      const fs::path rel = fs::relative(it->path(), config.cache_dir, ec);
      cache.push_back(describe(it->path(), cache_name(rel), true));
    }
  }
  for (const fs::path& dir : config.models_path) {
    std::vector<fs::path> files;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      std::error_code type_ec;
      if (is_gguf_file(*it)) {
        files.push_back(it->path());
      } else if (it->is_directory(type_ec)) {
        std::error_code sub_ec;
        for (fs::directory_iterator s(it->path(), sub_ec), send; !sub_ec && s != send; s.increment(sub_ec)) {
          if (is_gguf_file(*s)) files.push_back(s->path());
        }
      }
    }
    ec.clear();
    for (const fs::path& f : files) local.push_back(describe(f, f.filename().string(), false));
  }
  const auto by_name = [](const StoredModel& a, const StoredModel& b) { return a.name < b.name; };
  std::sort(cache.begin(), cache.end(), by_name);
  std::sort(local.begin(), local.end(), by_name);
  cache.insert(cache.end(), local.begin(), local.end());
  return cache;
}

}  // namespace ferrite::tools
