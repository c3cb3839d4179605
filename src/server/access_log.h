// One access-log line per request: id, method, route, status, tokens and
// latency, as text or as a JSON object.
#pragma once

#include <string>

#include "server/server_state.h"

namespace ferrite::server {

struct AccessEntry {
  std::string id;
  std::string method;
  std::string path;
  std::string remote;
  int status = 0;
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  bool streamed = false;
  double latency_ms = 0.0;
};

std::string format_access(const AccessEntry& e, LogFormat format);

}  // namespace ferrite::server
