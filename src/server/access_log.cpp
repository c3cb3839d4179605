#include "server/access_log.h"

#include <cstdio>

namespace ferrite::server {

std::string format_access(const AccessEntry& e, LogFormat format) {
  if (format == LogFormat::Json) {
    return dump({{"id", e.id},
                 {"method", e.method},
                 {"route", e.path},
                 {"remote", e.remote},
                 {"status", e.status},
                 {"prompt_tokens", e.prompt_tokens},
                 {"completion_tokens", e.completion_tokens},
                 {"stream", e.streamed},
                 {"latency_ms", e.latency_ms}});
  }
  char buf[96];
  std::snprintf(buf, sizeof buf, " %d tokens=%lld/%lld %.1fms", e.status, static_cast<long long>(e.prompt_tokens),
                static_cast<long long>(e.completion_tokens), e.latency_ms);
  return e.id + " " + e.remote + " " + e.method + " " + e.path + buf + (e.streamed ? " stream" : "");
}

}  // namespace ferrite::server
