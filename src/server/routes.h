// Route registration, one function per group of endpoints, and the wrapper
// that turns a JSON handler into an httplib handler with OpenAI-shaped errors.
#pragma once

#include <functional>

#include <httplib.h>

#include "server/server_state.h"

namespace ferrite::server {

// fn(request body (null for GET), request, response). Errors thrown become
// OpenAI error bodies with their status.
using JsonRoute = std::function<void(const Json& body, const httplib::Request&, httplib::Response&)>;
httplib::Server::Handler json_route(ServerState& st, bool parse_body, JsonRoute fn);

void set_json(httplib::Response& res, const Json& body, int status = 200);
void set_error(ServerState& st, httplib::Response& res, int status, const std::string& type,
               const std::string& message, const std::string& param = {}, const std::string& code = {});

void add_chat_routes(httplib::Server& http, ServerState& st);        // routes_chat.cpp
void add_completion_routes(httplib::Server& http, ServerState& st);  // routes_completions.cpp
void add_native_routes(httplib::Server& http, ServerState& st);      // routes_native.cpp
void add_info_routes(httplib::Server& http, ServerState& st);        // routes_info.cpp

// The tokens of a prompt given as text (BOS as the model wants, special
// tokens parsed) or as ids (checked against the vocabulary).
std::vector<int32_t> prompt_tokens(ServerState& st, const Json& prompt, const char* param);

}  // namespace ferrite::server
