// Server-sent events: one `data: <json>` line and a blank line per event,
// and the final `data: [DONE]`.
#pragma once

#include <string>

#include <httplib.h>

#include "server/server_state.h"

namespace ferrite::server {

inline bool sse_send(httplib::DataSink& sink, const Json& event) {
  const std::string s = "data: " + dump(event) + "\n\n";
  return sink.write(s.data(), s.size());
}

inline bool sse_done(httplib::DataSink& sink) {
  static const std::string kDone = "data: [DONE]\n\n";
  const bool ok = sink.write(kDone.data(), kDone.size());
  sink.done();
  return ok;
}

}  // namespace ferrite::server
