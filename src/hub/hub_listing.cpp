#include "hub/hub_listing.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <mutex>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/version.h"
#include "hub/errors.h"

namespace ferrite::hub {
namespace {

constexpr size_t kMaxListingBytes = 16u << 20;
constexpr long kTimeoutSeconds = 60;
constexpr const char* kDefaultQuant = "Q4_K_M";

// llama.cpp's quantization names (file types), longest first within a family
// so that Q4_K_M is found before Q4_K.
constexpr const char* kQuantTags[] = {
    "IQ2_XXS", "IQ3_XXS", "Q3_K_S", "Q3_K_M", "Q3_K_L", "Q4_K_S", "Q4_K_M", "Q5_K_S", "Q5_K_M", "IQ1_S", "IQ1_M",
    "IQ2_XS",  "IQ2_S",   "IQ2_M",  "IQ3_XS", "IQ3_S",  "IQ3_M",  "IQ4_NL", "IQ4_XS", "Q2_K_S", "Q2_K",  "Q3_K",
    "Q4_K",    "Q5_K",    "Q6_K",   "Q4_0_4_4", "Q4_0_4_8", "Q4_0_8_8", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0",
    "TQ1_0",   "TQ2_0",   "BF16",   "F16",    "F32",
};

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_gguf(const std::string& path) { return ends_with(upper(path), ".GGUF"); }

// "-00002-of-00003" at the end of a stem: the part number (1-based), else 0.
int split_part(const std::string& stem) {
  const size_t of = stem.rfind("-of-");
  if (of == std::string::npos || of < 6 || stem[of - 6] != '-') return 0;
  const std::string part = stem.substr(of - 5, 5);
  if (!std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; })) return 0;
  return std::stoi(part);
}

std::string stem_of(const std::string& path) {
  std::string name = path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1);
  if (ends_with(upper(name), ".GGUF")) name.resize(name.size() - 5);
  if (split_part(name) > 0) name.resize(name.rfind("-of-") - 6);
  return name;
}

// mmproj and other companion files are not the model.
bool is_companion(const std::string& path) { return upper(path).find("MMPROJ") != std::string::npos; }

size_t on_listing_body(char* data, size_t size, size_t n, void* user) {
  auto* out = static_cast<std::string*>(user);
  if (out->size() + size * n > kMaxListingBytes) return 0;  // refuse an oversized answer
  out->append(data, size * n);
  return size * n;
}

std::string http_get(const std::string& url, const HubConfig& config) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) throw NetworkError(url, "cannot start an HTTP request (libcurl)");
  std::string body;
  char errbuf[CURL_ERROR_SIZE] = {0};
  static const std::string agent = std::string("ferrite/") + kVersion;
  curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_MAXREDIRS, 5L);
  curl_easy_setopt(curl.get(), CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl.get(), CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl.get(), CURLOPT_USERAGENT, agent.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT, kTimeoutSeconds);
  curl_easy_setopt(curl.get(), CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, on_listing_body);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &body);
  if (!config.token.empty()) {
    curl_easy_setopt(curl.get(), CURLOPT_HTTPAUTH, CURLAUTH_BEARER);
    curl_easy_setopt(curl.get(), CURLOPT_XOAUTH2_BEARER, config.token.c_str());
  }
  const CURLcode rc = curl_easy_perform(curl.get());
  if (rc != CURLE_OK) {
    throw NetworkError(url, "listing " + url + " failed: " + (errbuf[0] != '\0' ? errbuf : curl_easy_strerror(rc)));
  }
  long status = 0;
  curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &status);
  if (status != 200) {
    const char* hint = status == 401 || status == 403 ? " (a gated or private repository needs HF_TOKEN)"
                       : status == 404                ? " (no such repository or revision)"
                                                      : "";
    throw HttpError(url, status, "listing " + url + " failed: HTTP " + std::to_string(status) + hint);
  }
  return body;
}

}  // namespace

bool looks_like_repo_quant(const std::string& arg) {
  const size_t colon = arg.find(':');
  const std::string head = arg.substr(0, colon);
  if (head.empty() || head.front() == '/' || head.front() == '.') return false;
  const size_t slash = head.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 >= head.size() || head.find('/', slash + 1) != std::string::npos) {
    return false;
  }
  if (colon == std::string::npos) return !is_gguf(head);  // owner/file.gguf is a path
  const std::string tag = arg.substr(colon + 1);
  return !tag.empty() && tag.find('/') == std::string::npos && !is_gguf(tag);
}

HfRepoQuant parse_repo_quant(const std::string& arg) {
  if (!looks_like_repo_quant(arg)) {
    throw InvalidArgument("'" + arg + "' is not a repository reference (expected owner/repo or owner/repo:QUANT)");
  }
  const size_t colon = arg.find(':');
  HfRepoQuant r;
  r.quant = colon == std::string::npos ? "" : arg.substr(colon + 1);
  // The name checks of a file reference apply to the repository part.
  const HfFile f = parse_hf_file(arg.substr(0, colon) + ":x.gguf");
  r.repo = f.repo;
  r.revision = f.revision;
  for (char c : r.quant) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') {
      throw InvalidArgument("'" + arg + "': the quantization tag '" + r.quant + "' has a '" + std::string(1, c) +
                            "' (expected letters, digits, '_' or '-', as Q4_K_M)");
    }
  }
  return r;
}

std::vector<RepoFile> list_repo_files(const HfRepoQuant& ref, const HubConfig& config) {
  const std::string url = config.endpoint + "/api/models/" + url_encode_path(ref.repo) + "/tree/" +
                          url_encode_path(ref.revision) + "?recursive=true";
  const nlohmann::json j = nlohmann::json::parse(http_get(url, config), nullptr, false);
  if (!j.is_array()) throw NetworkError(url, "the hub's listing of " + ref.repo + " is not a JSON array");
  std::vector<RepoFile> out;
  for (const nlohmann::json& e : j) {
    if (!e.is_object() || e.value("type", "") != "file" || !e.contains("path") || !e["path"].is_string()) continue;
    RepoFile f;
    f.path = e["path"].get<std::string>();
    if (e.contains("size") && e["size"].is_number_unsigned()) f.size = e["size"].get<uint64_t>();
    if (e.contains("lfs") && e["lfs"].is_object()) {
      const nlohmann::json& lfs = e["lfs"];
      const std::string oid = lfs.value("oid", "");
      if (oid.size() == 64 && std::all_of(oid.begin(), oid.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); })) {
        f.sha256 = oid;
        for (char& c : f.sha256) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      }
      if (lfs.contains("size") && lfs["size"].is_number_unsigned()) f.size = lfs["size"].get<uint64_t>();
    }
    out.push_back(std::move(f));
  }
  return out;
}

std::string quant_tag(const std::string& file_name) {
  const std::string s = upper(stem_of(file_name));
  std::string best;
  for (const char* tag : kQuantTags) {
    const std::string t = tag;
    for (size_t at = s.find(t); at != std::string::npos; at = s.find(t, at + 1)) {
      const bool start_ok = at == 0 || !std::isalnum(static_cast<unsigned char>(s[at - 1]));
      const size_t end = at + t.size();
      const bool end_ok = end == s.size() || (!std::isalnum(static_cast<unsigned char>(s[end])) && s[end] != '_');
      if (start_ok && end_ok && t.size() > best.size()) best = t;
    }
  }
  return best;
}

RepoFile pick_quant_file(const std::vector<RepoFile>& files, const HfRepoQuant& ref) {
  std::vector<const RepoFile*> models;
  for (const RepoFile& f : files) {
    if (!is_gguf(f.path) || is_companion(f.path)) continue;
    const int part = split_part(f.path.substr(0, f.path.size() - 5));
    if (part > 1) continue;  // a split model is named by its first part
    models.push_back(&f);
  }
  if (models.empty()) throw InvalidArgument(ref.repo + " has no GGUF files");
  const std::string want = upper(ref.quant.empty() ? kDefaultQuant : ref.quant);
  std::vector<const RepoFile*> match;
  for (const RepoFile* f : models) {
    if (quant_tag(f->path) == want) match.push_back(f);
  }
  if (match.empty() && ref.quant.empty() && models.size() == 1) return *models.front();
  if (match.size() == 1) return *match.front();
  std::string tags;
  for (const RepoFile* f : models) {
    const std::string t = quant_tag(f->path);
    const std::string shown = t.empty() ? f->path : t;
    if (tags.find(shown) == std::string::npos) tags += (tags.empty() ? "" : ", ") + shown;
  }
  if (match.empty()) {
    throw InvalidArgument(ref.repo + " has no " + (ref.quant.empty() ? "default (" + std::string(kDefaultQuant) + ")" : want) +
                          " GGUF file; it has: " + tags + " (name one as " + ref.repo + ":TAG)");
  }
  std::string names;
  for (const RepoFile* f : match) names += (names.empty() ? "" : ", ") + f->path;
  throw InvalidArgument(ref.repo + " has several " + want + " files (" + names + "); name one as " + ref.repo +
                        ":FILE.gguf");
}

}  // namespace ferrite::hub
