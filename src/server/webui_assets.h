// The web UI's files (src/server/webui/), compiled into the binary by
// cmake/embed_webui.cmake: each with its content type and ETag.
#pragma once

#include <span>
#include <string_view>

namespace ferrite::server {

struct WebAsset {
  std::string_view name;          // file name under src/server/webui/ ("index.html")
  std::string_view content_type;  // "text/html; charset=utf-8", ...
  std::string_view etag;          // quoted: "\"0123456789abcdef\"" (SHA-256 prefix of the bytes)
  std::string_view body;
};

// Every embedded file, sorted by name (the generated webui_assets.cpp).
std::span<const WebAsset> web_assets();

}  // namespace ferrite::server
