// /metrics in Prometheus' text exposition format.
#pragma once

#include <string>

#include "server/server_state.h"

namespace ferrite::server {

std::string render_metrics(const ServerState& st);

}  // namespace ferrite::server
