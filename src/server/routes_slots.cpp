// POST /slots/{id}?action=save|restore|erase: a slot's cache to a file of
// --slot-save-path and back (llama-server's API). File names are plain names
// inside that folder.
#include <filesystem>

#include "server/api_error.h"
#include "server/request_params.h"
#include "server/routes.h"

namespace ferrite::server {
namespace {

constexpr size_t kMaxFilenameBytes = 200;
constexpr int kStatusConflict = 409;

// A name of letters, digits, '.', '_' and '-', not starting with '.'.
bool plain_file_name(const std::string& name) {
  if (name.empty() || name.size() > kMaxFilenameBytes || name.front() == '.') return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

int slot_id(const std::string& path) {
  const std::string digits = path.substr(std::string("/slots/").size());
  if (digits.empty() || digits.size() > 4 || digits.find_first_not_of("0123456789") != std::string::npos) {
    throw ApiError(kStatusNotFound, "invalid_request_error", "no slot '" + digits + "'", "id_slot");
  }
  return std::stoi(digits);
}

void slot_route(ServerState& st, const Json& body, const Request& req, Response& res) {
  const int id = slot_id(req.path);
  if (id >= st.engine.n_parallel()) {
    throw ApiError(kStatusNotFound, "invalid_request_error",
                   "slot " + std::to_string(id) + " does not exist (0.." + std::to_string(st.engine.n_parallel() - 1) + ")",
                   "id_slot");
  }
  const std::string action = req.param("action");
  SlotAction what;
  if (action == "save") {
    what = SlotAction::Save;
  } else if (action == "restore") {
    what = SlotAction::Restore;
  } else if (action == "erase") {
    what = SlotAction::Erase;
  } else {
    throw bad_request("'action' must be save, restore or erase", "action");
  }
  std::string filename, path;
  if (what != SlotAction::Erase) {
    if (st.opt.slot_save_path.empty()) {
      throw ApiError(kStatusNotImplemented, "not_supported_error",
                     "slot save and restore are off: start the server with --slot-save-path FOLDER", "action");
    }
    filename = opt_string(body, "filename").value_or("");
    if (!plain_file_name(filename)) {
      throw bad_request("'filename' must be a plain file name (letters, digits, '.', '_', '-'; not starting with '.')",
                        "filename");
    }
    path = (std::filesystem::path(st.opt.slot_save_path) / filename).string();
  }
  const SlotActionResult r = st.engine.slot_action(id, what, path);
  if (!r.ok) {
    if (r.busy) throw ApiError(kStatusConflict, "invalid_request_error", r.error, "id_slot", "slot_busy");
    throw bad_request(r.error, "filename");
  }
  Json out = {{"id_slot", id}};
  switch (what) {
    case SlotAction::Save:
      out["filename"] = filename;
      out["n_saved"] = r.n_tokens;
      out["n_written"] = r.n_bytes;
      out["timings"] = {{"save_ms", r.ms}};
      break;
    case SlotAction::Restore:
      out["filename"] = filename;
      out["n_restored"] = r.n_tokens;
      out["n_read"] = r.n_bytes;
      out["timings"] = {{"restore_ms", r.ms}};
      break;
    case SlotAction::Erase:
      out["n_erased"] = r.n_tokens;
      break;
  }
  set_json(res, out);
}

}  // namespace

void add_slot_routes(Routes& routes, ServerState& st) {
  routes.post("/slots/", json_route(st, true, [&st](const Json& body, const Request& req, Response& res) {
    slot_route(st, body, req, res);
  }));
}

}  // namespace ferrite::server
