// Server-sent events: one `data: <json>` line and a blank line per event,
// and the final `data: [DONE]`.
#pragma once

#include <string>

#include "server/http/message.h"
#include "server/server_state.h"

namespace ferrite::server {

inline bool sse_send(http::StreamSink& sink, const Json& event) {
  return sink.write("data: " + dump(event) + "\n\n");
}

inline bool sse_done(http::StreamSink& sink) { return sink.write("data: [DONE]\n\n"); }

}  // namespace ferrite::server
