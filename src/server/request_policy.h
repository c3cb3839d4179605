// What keeps a web page from driving the server from a visitor's browser:
//  - Host: when the server listens on a loopback address, a request must
//    name a loopback host (localhost, 127.0.0.1, [::1], any port), so a page
//    whose own name resolves to 127.0.0.1 (DNS rebinding) is refused;
//  - Origin: a request from a page (browsers send Origin) is refused unless
//    the origin is allowed with --cors, or is this server itself;
//  - Content-Type: JSON bodies must say application/json; the types a page
//    may send without a CORS preflight (text/plain, form encodings) are
//    refused, so the Origin check always happens first.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/http/message.h"

namespace ferrite::server {

struct OriginPolicy {
  bool loopback_only = true;          // Host must be a loopback name
  std::vector<std::string> allowed;   // --cors origins ("*": any)

  // Whether `host` (an address to listen on) is a loopback address.
  static bool is_loopback_listen(const std::string& host);
};

// The host part of a Host header ("[::1]:8080" -> "::1", "a.b:80" -> "a.b").
std::string host_name(std::string_view host_header);
bool is_loopback_name(std::string_view host);

enum class OriginVerdict {
  None,       // no Origin header: not from a page
  Same,       // the page is this server's own
  Allowed,    // listed by --cors
  Refused,
};

// A reason to refuse the request's Host (empty: fine).
std::string check_host(const http::Request& req, const OriginPolicy& policy);
OriginVerdict check_origin(const http::Request& req, const OriginPolicy& policy);

// application/json (or any application/...+json), with parameters.
bool is_json_content_type(std::string_view content_type);

// The CORS headers of an answer to an allowed origin (and, for a preflight,
// the methods and headers allowed).
void add_cors_headers(http::Response& res, const std::string& origin, bool preflight);

}  // namespace ferrite::server
