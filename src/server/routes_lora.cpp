// GET /lora-adapters: the server's adapters [{id, path, scale}] with the
// scales of requests without a `lora` field; POST /lora-adapters with
// [{id, scale}, ...] sets those scales (adapters not listed: 0), as
// llama-server does. A request's own `lora` field (request_params.cpp,
// parse_lora_field) has the same shape and applies to that request only.
#include <cmath>

#include "server/api_error.h"
#include "server/request_params.h"
#include "server/routes.h"

namespace ferrite::server {

std::vector<float> parse_lora_field(const Json& v, size_t n_adapters, const char* param) {
  if (!v.is_array()) throw bad_request("'" + std::string(param) + "' must be an array of {id, scale} objects", param);
  std::vector<float> scales(n_adapters, 0.0f);
  if (n_adapters == 0 && !v.empty()) throw bad_request("invalid adapter id: the server has no LoRA adapters", param);
  for (const Json& e : v) {
    if (!e.is_object()) throw bad_request("'" + std::string(param) + "' must be an array of {id, scale} objects", param);
    const auto id = opt_integer(e, "id", 0, static_cast<int64_t>(n_adapters) - 1);
    if (!id) throw bad_request("each adapter of '" + std::string(param) + "' needs an 'id'", param);
    const auto scale = opt_number(e, "scale", -1e6, 1e6);
    scales[static_cast<size_t>(*id)] = static_cast<float>(scale.value_or(0.0));
  }
  return scales;
}

void add_lora_routes(Routes& routes, ServerState& st) {
  routes.get("/lora-adapters", json_route(st, false, [&st](const Json&, const Request&, Response& res) {
               Json out = Json::array();
               for (const LoraAdapterInfo& a : st.engine.lora_adapters()) {
                 out.push_back({{"id", a.id}, {"path", a.path}, {"scale", a.scale}});
               }
               set_json(res, out);
             }));
  // The body is an array, not the object json_route parses.
  routes.add({"POST", "/lora-adapters", json_route(st, false, [&st](const Json&, const Request& req, Response& res) {
                const Json body = parse_request_json(req.body);
                if (!body.is_array()) throw bad_request("the request body must be an array of {id, scale} objects");
                st.engine.set_lora_scales(parse_lora_field(body, st.engine.n_lora(), "lora"));
                set_json(res, {{"success", true}});
              }),
              false, false});
}

}  // namespace ferrite::server
