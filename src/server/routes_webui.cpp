// GET / and /webui/<file>: the chat page (src/server/webui/) from the
// binary itself. Served without the API key (the page asks for it and
// sends it with its API calls), revalidated by ETag on every load.
#include <string_view>

#include "server/routes.h"
#include "server/webui_assets.h"

namespace ferrite::server {
namespace {

constexpr int kStatusNotModified = 304;
// Scripts and styles only from this server, API calls only to it, no
// framing: a bug in the page's markdown renderer cannot load or send
// anything elsewhere.
constexpr const char* kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

bool etag_matches(std::string_view if_none_match, std::string_view etag) {
  while (!if_none_match.empty()) {
    const size_t comma = if_none_match.find(',');
    std::string_view tag = trim(if_none_match.substr(0, comma));
    if (tag.substr(0, 2) == "W/") tag.remove_prefix(2);
    if (tag == "*" || tag == etag) return true;
    if (comma == std::string_view::npos) break;
    if_none_match.remove_prefix(comma + 1);
  }
  return false;
}

void add_webui_routes(Routes& routes, ServerState& st) {
  if (!st.opt.webui) return;
  for (const WebAsset& a : web_assets()) {
    Handler serve = [&a](const Request& req, Response& res) {
      res.set_header("ETag", std::string(a.etag));
      res.set_header("Cache-Control", "no-cache");
      res.set_header("X-Content-Type-Options", "nosniff");
      res.set_header("Referrer-Policy", "no-referrer");
      if (a.name.ends_with(".html")) {
        res.set_header("Content-Security-Policy", kContentSecurityPolicy);
        res.set_header("X-Frame-Options", "DENY");
      }
      if (etag_matches(req.header("If-None-Match"), a.etag)) {
        res.status = kStatusNotModified;
        return;
      }
      res.set_content(std::string(a.body), std::string(a.content_type));
    };
    const std::string path = "/webui/" + std::string(a.name);
    routes.add({"GET", path, serve, false, true, true});
    if (a.name == "index.html") routes.add({"GET", "/", serve, false, true, true});
  }
}

}  // namespace ferrite::server
