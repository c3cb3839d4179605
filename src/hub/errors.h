// Errors of model resolution and download. Each names what was asked for and
// what went wrong, so that the one line `ferrite` prints is enough to act on.
#pragma once

#include <string>

#include "core/error.h"

namespace ferrite::hub {

// A model argument matched no file in any place searched, and was not
// downloaded (unknown name, or downloading disabled).
class ModelNotFound : public InvalidArgument {
 public:
  explicit ModelNotFound(const std::string& what) : InvalidArgument(what) {}
};

// Base of every failure of a download. Carries the URL asked for.
class DownloadError : public Error {
 public:
  DownloadError(const std::string& url, const std::string& what) : Error(what), url_(url) {}
  const std::string& url() const { return url_; }

 private:
  std::string url_;
};

// The server answered with an HTTP error status (404, 401, 500, ...).
class HttpError : public DownloadError {
 public:
  HttpError(const std::string& url, long status, const std::string& what)
      : DownloadError(url, what), status_(status) {}
  long status() const { return status_; }

 private:
  long status_;
};

// No answer, or an answer cut short: DNS failure, refused connection,
// timeout, connection dropped mid-transfer (after the allowed retries).
class NetworkError : public DownloadError {
 public:
  NetworkError(const std::string& url, const std::string& what) : DownloadError(url, what) {}
};

// Downloading is switched off (FERRITE_OFFLINE / HF_HUB_OFFLINE): nothing
// was sent anywhere.
class OfflineError : public DownloadError {
 public:
  OfflineError(const std::string& url, const std::string& what) : DownloadError(url, what) {}
};

// The bytes received do not match the expected size or SHA-256. The partial
// file has been removed; nothing was put into the cache.
class IntegrityError : public DownloadError {
 public:
  IntegrityError(const std::string& url, const std::string& what) : DownloadError(url, what) {}
};

}  // namespace ferrite::hub
