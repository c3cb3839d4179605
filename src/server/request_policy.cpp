#include "server/request_policy.h"

#include <cctype>

namespace ferrite::server {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// "http://host:port" -> "host:port" (lower case); "" for anything else.
std::string origin_authority(std::string_view origin) {
  const std::string o = lower(trim(origin));
  for (const char* scheme : {"http://", "https://"}) {
    const std::string_view sch(scheme);
    if (o.compare(0, sch.size(), sch) == 0) {
      std::string rest = o.substr(sch.size());
      if (rest.empty() || rest.find('/') != std::string::npos) return "";
      return rest;
    }
  }
  return "";
}

}  // namespace

bool OriginPolicy::is_loopback_listen(const std::string& host) {
  const std::string h = lower(host);
  return h == "localhost" || h == "::1" || h == "[::1]" || h.compare(0, 4, "127.") == 0;
}

std::string host_name(std::string_view host_header) {
  std::string_view h = trim(host_header);
  if (!h.empty() && h.front() == '[') {
    const size_t close = h.find(']');
    return close == std::string_view::npos ? std::string() : lower(h.substr(1, close - 1));
  }
  const size_t colon = h.rfind(':');
  return lower(colon == std::string_view::npos ? h : h.substr(0, colon));
}

bool is_loopback_name(std::string_view host) {
  const std::string h = lower(host);
  if (h == "localhost" || h == "::1") return true;
  if (h.size() > 10 && h.compare(h.size() - 10, 10, ".localhost") == 0) return true;
  // 127.0.0.0/8 written as a dotted quad.
  if (h.compare(0, 4, "127.") != 0) return false;
  int dots = 0;
  for (char c : h) {
    if (c == '.') {
      ++dots;
    } else if (!std::isdigit(static_cast<unsigned char>(c))) {
      return false;
    }
  }
  return dots == 3;
}

std::string check_host(const http::Request& req, const OriginPolicy& policy) {
  if (!req.has_header("Host")) {
    return req.version >= 11 ? "an HTTP/1.1 request needs a Host header" : "";
  }
  if (!policy.loopback_only) return "";
  const std::string name = host_name(req.header("Host"));
  if (is_loopback_name(name)) return "";
  return "the Host '" + name + "' is not a loopback name: this server listens on loopback only "
         "(start it with --host to serve other names)";
}

OriginVerdict check_origin(const http::Request& req, const OriginPolicy& policy) {
  if (!req.has_header("Origin")) return OriginVerdict::None;
  const std::string origin = std::string(trim(req.header("Origin")));
  for (const std::string& a : policy.allowed) {
    if (a == "*" || lower(a) == lower(origin)) return OriginVerdict::Allowed;
  }
  const std::string authority = origin_authority(origin);
  if (!authority.empty() && authority == lower(trim(req.header("Host")))) return OriginVerdict::Same;
  return OriginVerdict::Refused;
}

bool is_json_content_type(std::string_view content_type) {
  std::string t = lower(trim(content_type.substr(0, content_type.find(';'))));
  if (t == "application/json") return true;
  return t.compare(0, 12, "application/") == 0 && t.size() > 17 && t.compare(t.size() - 5, 5, "+json") == 0;
}

void add_cors_headers(http::Response& res, const std::string& origin, bool preflight) {
  res.set_header("Access-Control-Allow-Origin", origin);
  res.set_header("Vary", "Origin");
  if (preflight) {
    res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
    res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type, X-Api-Key");
    res.set_header("Access-Control-Max-Age", "600");
  }
}

}  // namespace ferrite::server
