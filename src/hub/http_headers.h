// The response headers a download cares about, parsed one header line at a
// time as libcurl delivers them (every response of a redirect chain).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ferrite::hub {

// "Content-Range: bytes first-last/total" (total 0 when "*"), or
// "bytes */total" for a 416 answer (first = last = 0, unsatisfied = true).
struct ContentRange {
  uint64_t first = 0;
  uint64_t last = 0;
  uint64_t total = 0;
  bool unsatisfied = false;
};

std::optional<ContentRange> parse_content_range(std::string_view value);

// a == b, ignoring the case of ASCII letters (header names, file suffixes).
bool ascii_iequals(std::string_view a, std::string_view b);

// A decimal size, rejecting signs, junk and overflow.
std::optional<uint64_t> parse_size(std::string_view value);

// The SHA-256 in an ETag-like value ("\"<64 hex>\"", W/ prefix allowed), in
// lower case; nullopt when the value is anything else (a git SHA-1, an MD5).
std::optional<std::string> parse_sha256_etag(std::string_view value);

// Headers of one HTTP response.
struct ResponseHeaders {
  long status = 0;
  std::optional<uint64_t> content_length;
  std::optional<ContentRange> content_range;
  std::string etag;
  std::string error_code;     // Hugging Face X-Error-Code
  std::string error_message;  // Hugging Face X-Error-Message
};

// Headers of a redirect chain: the current (last) response, plus what the hub
// says about the file on any response of the chain.
struct ChainHeaders {
  ResponseHeaders last;
  std::string linked_etag;              // X-Linked-Etag
  std::optional<uint64_t> linked_size;  // X-Linked-Size

  // Takes one raw header line (with or without CRLF). A status line starts a
  // new response.
  void add_line(std::string_view line);
};

}  // namespace ferrite::hub
