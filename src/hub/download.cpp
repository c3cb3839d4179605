#include "hub/download.h"

#include <curl/curl.h>

#include <algorithm>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "core/error.h"
#include "core/sha256.h"
#include "core/version.h"
#include "hub/errors.h"
#include "hub/http_headers.h"
#include "hub/part_file.h"

namespace ferrite::hub {
namespace {

constexpr long kConnectTimeoutSeconds = 30;
constexpr long kLowSpeedLimitBytesPerSecond = 1;  // below this for kLowSpeedTimeSeconds: give up
constexpr long kLowSpeedTimeSeconds = 60;
constexpr long kMaxRedirects = 10;
constexpr size_t kErrorBodyLimit = 512;
constexpr size_t kErrorSnippetLimit = 160;
constexpr long kHttpOk = 200;
constexpr long kHttpPartialContent = 206;
constexpr long kHttpBadRequest = 400;
constexpr long kHttpRangeNotSatisfiable = 416;

void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
using CurlHandle = std::unique_ptr<CURL, CurlDeleter>;

// State shared with libcurl's callbacks during one request. Callbacks must not
// throw through C code: an exception is parked in `failure` and the transfer
// aborted; the caller rethrows it.
struct Request {
  const DownloadSpec* spec = nullptr;
  PartFile* part = nullptr;
  Sha256* hash = nullptr;
  ProgressReporter* progress = nullptr;
  uint64_t pos = 0;            // bytes of the file on disk (and hashed)
  uint64_t received = 0;       // body bytes written by this request
  uint64_t total = 0;          // whole-file size the server announced, 0 unknown
  ChainHeaders headers;
  bool body_started = false;
  bool accepting = false;      // body is file data (200/206), not an error page
  std::string error_body;
  std::exception_ptr failure;

  // Decides, from the final response's headers, where its body goes.
  void begin_body() {
    body_started = true;
    const ResponseHeaders& r = headers.last;
    if (r.status == kHttpPartialContent) {
      if (!r.content_range || r.content_range->unsatisfied || r.content_range->first != pos) {
        throw NetworkError(spec->url, "download of " + terminal_safe(spec->url) + " failed: the server resumed at the wrong byte (asked for byte " +
                                          std::to_string(pos) + ")");
      }
      total = r.content_range->total;
      accepting = true;
    } else if (r.status == kHttpOk) {
      if (pos > 0) {
        progress->break_line();
        if (spec->notify) spec->notify("the server does not support resuming; downloading from the start");
        part->truncate();
        *hash = Sha256();
        pos = 0;
      }
      total = r.content_length.value_or(0);
      accepting = true;
    }
    if (accepting && total != 0 && spec->expected_size != 0 && total != spec->expected_size) {
      throw IntegrityError(spec->url, "download of " + terminal_safe(spec->url) + " refused: the server announces " +
                                          std::to_string(total) + " bytes, expected " +
                                          std::to_string(spec->expected_size));
    }
  }

  void body(const char* data, size_t n) {
    if (!body_started) begin_body();
    if (!accepting) {
      error_body.append(data, std::min(n, kErrorBodyLimit - std::min(kErrorBodyLimit, error_body.size())));
      return;
    }
    const uint64_t limit = total != 0 ? total : (spec->expected_size != 0 ? spec->expected_size : UINT64_MAX);
    if (n > limit - std::min(limit, pos)) {
      throw IntegrityError(spec->url, "download of " + terminal_safe(spec->url) + " failed: the server sent more than the " +
                                          std::to_string(limit) + " bytes announced");
    }
    part->write_at(pos, data, n);
    hash->update(data, n);
    pos += n;
    received += n;
    progress->update(pos, total != 0 ? total : spec->expected_size);
  }
};

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* req = static_cast<Request*>(user);
  req->headers.add_line(std::string_view(data, size * count));
  return size * count;
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* req = static_cast<Request*>(user);
  const size_t n = size * count;
  try {
    req->body(data, n);
    return n;
  } catch (...) {
    req->failure = std::current_exception();
    return n == 0 ? 1 : 0;  // any count other than n aborts the transfer
  }
}

// The start of a plain-text error body, for the message; HTML pages are
// left out (they say nothing the status does not).
std::string printable_snippet(const std::string& body) {
  const size_t first = body.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || body[first] == '<') return {};
  std::string s;
  for (char c : body.substr(first, kErrorSnippetLimit)) s.push_back((c >= 0x20 && c < 0x7f) ? c : ' ');
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

[[noreturn]] void throw_http_error(const DownloadSpec& spec, long status, const Request& req) {
  std::string msg = "download of " + terminal_safe(spec.url) + " failed: HTTP " + std::to_string(status);
  const ResponseHeaders& r = req.headers.last;
  if (status == 404) {
    msg += " not found (check the repository and file name)";
  } else if (status == 401 || status == 403) {
    msg += spec.bearer_token.empty()
               ? " access denied: the repository may be gated or private; set HF_TOKEN to an access token that can read it"
               : " access denied: the token in HF_TOKEN was refused or cannot read this repository";
  } else if (status == 429) {
    msg += " too many requests: try again later";
  }
  const std::string detail = !r.error_message.empty() ? r.error_message : printable_snippet(req.error_body);
  if (!detail.empty()) msg += " [server: " + terminal_safe(detail, kErrorSnippetLimit) + "]";
  throw HttpError(spec.url, status, msg);
}

[[noreturn]] void throw_network_error(const DownloadSpec& spec, CURLcode rc, const char* errbuf, uint64_t kept,
                                      const std::filesystem::path& part) {
  std::string msg = "download of " + terminal_safe(spec.url) + " failed: ";
  switch (rc) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
      msg += "cannot resolve the host name (no network, or set FERRITE_HF_ENDPOINT)";
      break;
    case CURLE_COULDNT_CONNECT:
      msg += "cannot connect to the server";
      break;
    case CURLE_OPERATION_TIMEDOUT:
      msg += "the server stopped answering (timeout)";
      break;
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
      msg += "the connection was closed before the transfer ended";
      break;
    default:
      msg += curl_easy_strerror(rc);
  }
  if (errbuf[0] != '\0') msg += " (" + terminal_safe(errbuf) + ")";
  if (kept > 0) {
    msg += "; " + std::to_string(kept) + " bytes kept in " + part.string() +
           ", run the same command again to resume";
  }
  throw NetworkError(spec.url, msg);
}

void setup_handle(CURL* curl, const DownloadSpec& spec, Request& req, char* errbuf, const std::string& range) {
  curl_easy_reset(curl);
  curl_easy_setopt(curl, CURLOPT_URL, spec.url.c_str());
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(curl, CURLOPT_MAXREDIRS, kMaxRedirects);
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  static const std::string user_agent = std::string("ferrite/") + kVersion;
  curl_easy_setopt(curl, CURLOPT_USERAGENT, user_agent.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, kConnectTimeoutSeconds);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, kLowSpeedLimitBytesPerSecond);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, kLowSpeedTimeSeconds);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &req);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &req);
  curl_easy_setopt(curl, CURLOPT_RANGE, range.empty() ? nullptr : range.c_str());
  if (!spec.bearer_token.empty()) {
    // libcurl sends it to the first host only, never to a redirect's other host.
    curl_easy_setopt(curl, CURLOPT_HTTPAUTH, CURLAUTH_BEARER);
    curl_easy_setopt(curl, CURLOPT_XOAUTH2_BEARER, spec.bearer_token.c_str());
  }
}

// What the server said about the file over all requests.
struct Advertised {
  std::string sha256;  // from X-Linked-Etag, or an ETag served without redirect
  std::string sha256_source;
  uint64_t size = 0;   // from X-Linked-Size
  uint64_t total = 0;  // from Content-Length / Content-Range
};

void record_advertised(Advertised& adv, const Request& req, long redirects) {
  if (auto sha = parse_sha256_etag(req.headers.linked_etag)) {
    adv.sha256 = *sha;
    adv.sha256_source = "the server's X-Linked-Etag";
  } else if (redirects == 0 && !req.headers.last.etag.empty()) {
    if (auto sha2 = parse_sha256_etag(req.headers.last.etag)) {
      adv.sha256 = *sha2;
      adv.sha256_source = "the server's ETag";
    }
  }
  if (req.headers.linked_size) adv.size = *req.headers.linked_size;
  if (req.total != 0) adv.total = req.total;
}

// Returns what the SHA-256 was checked against ("" when nothing was known).
std::string verify(const DownloadSpec& spec, const Advertised& adv, uint64_t size, const std::string& sha) {
  const auto check_size = [&](uint64_t want, const char* source) {
    if (want != 0 && size != want) {
      throw IntegrityError(spec.url, "download of " + terminal_safe(spec.url) + " failed: received " + std::to_string(size) +
                                         " bytes, " + source + " says " + std::to_string(want) +
                                         "; the partial file was removed");
    }
  };
  check_size(spec.expected_size, "the expected size");
  check_size(adv.total, "Content-Length");
  check_size(adv.size, "X-Linked-Size");
  const auto check_sha = [&](const std::string& want, const std::string& source) {
    if (!want.empty() && sha != want) {
      throw IntegrityError(spec.url, "download of " + terminal_safe(spec.url) + " failed: SHA-256 mismatch: got " + sha +
                                         ", expected " + want + " (from " + source +
                                         "); the partial file was removed");
    }
  };
  check_sha(spec.expected_sha256, "the expected checksum");
  check_sha(adv.sha256, adv.sha256_source);
  if (!spec.expected_sha256.empty()) return "the expected checksum";
  return adv.sha256.empty() ? std::string() : adv.sha256_source;
}

// Transfers the rest of the file into `part` (resuming from its current
// size), verifies it and commits it.
DownloadResult transfer(const DownloadSpec& spec, PartFile& part, CURL* curl) {
  DownloadResult result;
  result.path = spec.destination;
  uint64_t pos = part.size();
  if (spec.expected_size != 0 && pos > spec.expected_size) {
    part.truncate();
    pos = 0;
  }
  result.resumed_from = pos;
  Sha256 hash;
  part.hash_prefix(hash, pos);
  if (pos > 0 && spec.notify) spec.notify("resuming " + terminal_safe(spec.destination.filename().string()) + " at " + format_bytes(pos));

  ProgressReporter progress(spec.progress_label.empty() ? spec.destination.filename().string() : spec.progress_label,
                            spec.progress);
  Advertised adv;
  const int max_attempts = std::max(1, spec.max_attempts);
  for (;;) {
    ++result.requests;
    Request req;
    req.spec = &spec;
    req.part = &part;
    req.hash = &hash;
    req.progress = &progress;
    req.pos = pos;
    char errbuf[CURL_ERROR_SIZE] = {0};
    const std::string range = pos > 0 ? std::to_string(pos) + "-" : std::string();
    setup_handle(curl, spec, req, errbuf, range);
    const CURLcode rc = curl_easy_perform(curl);
    if (req.failure) std::rethrow_exception(req.failure);
    long status = 0;
    long redirects = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_getinfo(curl, CURLINFO_REDIRECT_COUNT, &redirects);
    if (rc == CURLE_OK && !req.body_started && (status == kHttpOk || status == kHttpPartialContent)) {
      req.begin_body();  // an empty body still decides restart-or-resume
    }
    pos = req.pos;
    if (status >= kHttpBadRequest && status != kHttpRangeNotSatisfiable) throw_http_error(spec, status, req);
    if (status == kHttpRangeNotSatisfiable) {
      const auto& cr = req.headers.last.content_range;
      if (cr && cr->total != 0 && pos == cr->total) {  // the .part was already complete
        adv.total = cr->total;
        record_advertised(adv, req, redirects);
        break;
      }
      if (result.requests >= max_attempts) throw_http_error(spec, status, req);
      part.truncate();  // the .part is longer than the file: start over
      hash = Sha256();
      pos = 0;
      continue;
    }
    record_advertised(adv, req, redirects);
    if (rc == CURLE_OK) {
      if (status != kHttpOk && status != kHttpPartialContent) {
        throw HttpError(spec.url, status, "download of " + terminal_safe(spec.url) + " failed: unexpected HTTP status " +
                                              std::to_string(status));
      }
      break;
    }
    if (req.received == 0 || result.requests >= max_attempts) {
      throw_network_error(spec, rc, errbuf, pos, part.path());
    }
    progress.break_line();
    if (spec.notify) {
      spec.notify("connection lost after " + format_bytes(pos) + "; resuming (attempt " +
                  std::to_string(result.requests + 1) + " of " + std::to_string(max_attempts) + ")");
    }
  }
  progress.finish(pos, adv.total != 0 ? adv.total : spec.expected_size);
  result.size = pos;
  result.sha256 = hash.hex_digest();
  result.verified_by = verify(spec, adv, result.size, result.sha256);
  part.commit(spec.destination);
  if (result.verified_by.empty() && spec.notify) {
    spec.notify("no checksum was known for " + terminal_safe(spec.destination.filename().string()) +
                " (none given, none from the server): stored unverified, sha256 " + result.sha256);
  }
  return result;
}

}  // namespace

DownloadResult download_file(const DownloadSpec& spec) {
  if (spec.offline) {
    throw OfflineError(spec.url, "not downloading " + terminal_safe(spec.url) +
                                     ": offline (FERRITE_OFFLINE or HF_HUB_OFFLINE is set) and the file is not in the cache");
  }
  init_curl_once();
  std::error_code ec;
  if (spec.destination.has_parent_path()) {
    std::filesystem::create_directories(spec.destination.parent_path(), ec);
    if (ec) throw IoError(spec.destination.parent_path().string(), "cannot create folder: " + ec.message());
  }
  PartFile part = PartFile::open_locked(spec.destination, spec.notify);
  if (part.finished_elsewhere()) {
    DownloadResult done;
    done.path = spec.destination;
    done.size = std::filesystem::file_size(spec.destination, ec);
    return done;
  }
  CurlHandle curl(curl_easy_init());
  if (!curl) throw NetworkError(spec.url, "download of " + terminal_safe(spec.url) + " failed: cannot initialise libcurl");
  for (int pass = 0;; ++pass) {
    const uint64_t had = part.size();
    try {
      return transfer(spec, part, curl.get());
    } catch (const IntegrityError&) {
      if (pass == 0 && had > 0) {
        // The kept bytes may come from another version of the file.
        if (spec.notify) spec.notify("the resumed download does not verify; downloading again from the start");
        part.truncate();
        continue;
      }
      part.remove();
      throw;
    } catch (...) {
      // Keep what was received for the next run, but no empty .part.
      std::error_code size_ec;
      if (std::filesystem::file_size(part.path(), size_ec) == 0 && !size_ec) part.remove();
      throw;
    }
  }
}

}  // namespace ferrite::hub
