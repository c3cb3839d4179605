// GET /health, /v1/models, /slots, /props, /metrics and POST /v1/embeddings.
#include "server/api_error.h"
#include "server/generation.h"
#include "server/metrics.h"
#include "server/request_params.h"
#include "server/routes.h"

namespace ferrite::server {
namespace {

Json slot_json(const SlotInfo& s) {
  return {{"id", s.id},
          {"state", slot_state_name(s.state)},
          {"is_processing", s.state != SlotState::Idle},
          {"n_ctx", s.n_ctx},
          {"n_cached", s.n_cached},
          {"n_served", s.n_served},
          {"n_prompt", s.last.n_prompt},
          {"n_prompt_cached", s.last.n_cached},
          {"n_decoded", s.last.n_generated}};
}

}  // namespace

void add_info_routes(Routes& routes, ServerState& st) {
  // Answered on the I/O thread: always at once, whatever the workers do.
  routes.get(
      "/health",
      [&st](const Request&, Response& res) {
        const EngineStats s = st.engine.stats();
        set_json(res, {{"status", "ok"}, {"slots_idle", st.engine.n_parallel() - s.active}, {"slots_processing", s.active}});
      },
      /*inline_route=*/true);
  auto models = json_route(st, false, [&st](const Json&, const Request&, Response& res) {
    const model::HParams& hp = st.engine.model().hparams();
    Json m = {{"id", st.opt.model_id}, {"object", "model"}, {"created", unix_time()}, {"owned_by", "ferrite"},
              {"meta", {{"n_ctx_train", hp.n_ctx_train}, {"n_vocab", hp.n_vocab}, {"n_embd", hp.n_embd}}}};
    set_json(res, {{"object", "list"}, {"data", Json::array({m})}});
  });
  routes.get("/v1/models", models, true);
  routes.get("/models", models, true);
  routes.get("/slots", json_route(st, false, [&st](const Json&, const Request&, Response& res) {
               Json out = Json::array();
               for (const SlotInfo& s : st.engine.slots()) out.push_back(slot_json(s));
               set_json(res, out);
             }),
             true);
  routes.get("/props", json_route(st, false, [&st](const Json&, const Request&, Response& res) {
               // The template's text is public (clients format prompts with
               // it); where files live on this host is not, unless asked.
               const std::string& origin = st.chat.origin();
               const bool origin_is_file = origin != "model" && chat::builtin_template(origin) == nullptr;
               Json j = {{"model", st.opt.model_id},
                         {"total_slots", st.engine.n_parallel()},
                         {"n_ctx", st.engine.n_ctx()},
                         {"n_ctx_slot", st.engine.slot_ctx()},
                         {"chat_template", st.chat.source()},
                         {"chat_template_origin", origin_is_file && !st.opt.props_paths ? "file" : origin},
                         {"default_generation_settings", {{"n_ctx", st.engine.slot_ctx()}}},
                         {"build_info", "ferrite"}};
               if (st.opt.props_paths) j["model_path"] = st.opt.model_path;
               set_json(res, j);
             }),
             true);
  routes.get(
      "/metrics", [&st](const Request&, Response& res) { res.set_content(render_metrics(st), "text/plain; version=0.0.4"); },
      true);
}

}  // namespace ferrite::server
