// One file over HTTP(S) with libcurl into a destination path:
//  - data goes to `<destination>.part`, locked against a second ferrite
//    downloading the same file; an existing .part is resumed with an HTTP
//    Range request (a server that ignores Range restarts it from zero);
//  - a connection dropped mid-transfer is resumed again, up to max_attempts
//    requests in all, as long as each attempt brought new bytes;
//  - the size is checked against Content-Length / Content-Range, the hub's
//    X-Linked-Size and the caller's expected size; the SHA-256 against the
//    caller's and the one the hub advertises (X-Linked-Etag, or a 64-hex ETag
//    served without redirect);
//  - only a complete, verified file is renamed into place (atomically).
// Failures throw HttpError, NetworkError, IntegrityError, OfflineError
// (hub/errors.h) or IoError (disk full, permissions, a .part that is a link
// or not ours); a corrupt .part is removed, a merely interrupted one is kept
// for the next run. What the server says (error messages) reaches messages
// through terminal_safe() only.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "hub/progress.h"

namespace ferrite::hub {

struct DownloadSpec {
  std::string url;
  std::filesystem::path destination;
  std::string bearer_token;      // sent as "Authorization: Bearer" to the first host only
  std::string expected_sha256;   // lower-case hex; empty when unknown
  uint64_t expected_size = 0;    // 0 when unknown
  int max_attempts = 5;          // HTTP requests per download, counting resumptions
  ProgressMode progress = ProgressMode::kAuto;
  std::string progress_label;    // shown before the bar; defaults to the file name
  bool offline = false;          // refuse (OfflineError) before any request: FERRITE_OFFLINE
  // Called with one-line notices ("resuming at 3.1 MiB", "waiting for another download").
  std::function<void(const std::string&)> notify;
};

struct DownloadResult {
  std::filesystem::path path;
  uint64_t size = 0;
  std::string sha256;           // of the file as written
  uint64_t resumed_from = 0;    // bytes already in the .part when the download began
  int requests = 0;             // HTTP requests made (0 when another process finished it)
  // What the SHA-256 was checked against ("the expected checksum", "the
  // server's X-Linked-Etag", ...); empty: nothing was known, the file is
  // stored unverified (and `notify` said so).
  std::string verified_by;
};

DownloadResult download_file(const DownloadSpec& spec);

// "<destination>.part"
std::filesystem::path partial_path(const std::filesystem::path& destination);

}  // namespace ferrite::hub
