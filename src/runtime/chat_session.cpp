#include "runtime/chat_session.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <utility>

#include "chat/chat_template.h"
#include "core/error.h"
#include "tokenizer/stream_decoder.h"

namespace ferrite::runtime {
namespace {

// Saved conversations larger than this are refused.
constexpr std::streamoff kMaxSavedChatBytes = 64 << 20;
// The "format" field of a saved conversation.
constexpr const char* kSavedChatFormat = "ferrite-chat";
constexpr int kSavedChatVersion = 1;
// The KV state is saved next to the messages, under this suffix.
constexpr const char* kKvSuffix = ".kv";

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string special_text(const tokenizer::Tokenizer& tok, int32_t id) {
  if (id < 0 || id >= tok.n_vocab()) return "";
  return tok.token_to_piece(id, /*special=*/true);
}

struct SavedChat {
  std::vector<ChatMessage> messages;
  std::string kv_path;  // "" when the save has no KV state
};

SavedChat parse_saved_chat(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw IoError(path, "cannot open");
  if (in.tellg() > kMaxSavedChatBytes) throw IoError(path, "file larger than 64 MiB");
  in.seekg(0);
  std::ostringstream ss;
  ss << in.rdbuf();
  chat::Json doc;
  try {
    doc = chat::Json::parse(ss.str());
  } catch (const chat::Json::parse_error& e) {
    throw InvalidArgument(path + ": not valid JSON: " + e.what());
  }
  const auto bad = [&](const std::string& why) { return InvalidArgument(path + ": not a saved chat: " + why); };
  if (!doc.is_object() || doc.value("format", std::string()) != kSavedChatFormat) {
    throw bad("no \"format\": \"" + std::string(kSavedChatFormat) + "\"");
  }
  if (!doc.contains("messages") || !doc["messages"].is_array()) throw bad("no \"messages\" array");
  SavedChat out;
  for (const chat::Json& m : doc["messages"]) {
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content") ||
        !m["content"].is_string()) {
      throw bad("each message needs string \"role\" and \"content\"");
    }
    out.messages.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
  }
  if (doc.contains("kv_state")) {
    if (!doc["kv_state"].is_string()) throw bad("\"kv_state\" must be a file name");
    // Relative to the messages file.
    out.kv_path = (std::filesystem::path(path).parent_path() / doc["kv_state"].get<std::string>()).string();
  }
  return out;
}

}  // namespace

ChatSession::ChatSession(Context& ctx, const tokenizer::Tokenizer& tok, ChatSessionParams params)
    : ctx_(ctx),
      tok_(tok),
      params_(std::move(params)),
      template_(chat::Template::parse(params_.template_source)),
      bos_text_(special_text(tok, tok.bos())),
      eos_text_(special_text(tok, tok.eos())),
      vocab_(tok),
      seq_(ctx, {.seq = params_.seq,
                 .n_keep = params_.n_keep + (tok.add_bos() && tok.bos() >= 0 ? 1 : 0),
                 .context_shift = params_.context_shift,
                 .prefill_chunk = params_.prefill_chunk}) {
  reset();  // the session owns its sequence: whatever it held is dropped
}

void ChatSession::add_message(std::string role, std::string content) {
  messages_.push_back({std::move(role), std::move(content)});
}

void ChatSession::pop_message() {
  if (!messages_.empty()) messages_.pop_back();
}

std::string ChatSession::render(bool add_generation_prompt) const {
  chat::Json msgs = chat::Json::array();
  for (const ChatMessage& m : messages_) msgs.push_back({{"role", m.role}, {"content", m.content}});
  chat::ChatOptions opt;
  opt.add_generation_prompt = add_generation_prompt;
  opt.bos_token = bos_text_;
  opt.eos_token = eos_text_;
  return chat::apply_chat_template(template_, msgs, opt);
}

std::vector<int32_t> ChatSession::tokenize(const std::string& text) const {
  std::vector<int32_t> out = tok_.encode(text, /*add_special=*/false, /*parse_special=*/true);
  if (tok_.add_bos() && tok_.bos() >= 0 && (out.empty() || out.front() != tok_.bos())) {
    out.insert(out.begin(), tok_.bos());
  }
  return out;
}

std::span<const float> ChatSession::prefill(std::span<const int32_t> tokens, PrefillStats* stats,
                                            const std::atomic<bool>* interrupt) {
  return seq_.prefill(tokens, stats, interrupt);
}

ChatAnswer ChatSession::respond(const std::string& user_text, const GenerationParams& params,
                                const std::function<void(std::string_view)>& on_text) {
  add_message("user", user_text);
  ChatAnswer ans;
  std::span<const float> logits;
  std::vector<int32_t> prompt;
  try {
    prompt = tokenize(render(/*add_generation_prompt=*/true));
    logits = prefill(prompt, &ans.prefill, params.interrupt);
  } catch (...) {
    pop_message();
    throw;
  }
  if (logits.empty()) {  // interrupted during the prefill
    pop_message();
    ans.stop = FinishReason::kInterrupted;
    return ans;
  }
  const auto t0 = Clock::now();
  Generation gen(vocab_, params,
                 {.n_ctx = static_cast<int32_t>(seq_.n_cells()),
                  .n_ctx_train = static_cast<int32_t>(ctx_.model().hparams().n_ctx_train)},
                 prompt);
  std::unique_ptr<Speculation> spec;
  if (drafter_ != nullptr) spec = std::make_unique<Speculation>(*drafter_, spec_params_);
  while (!gen.done()) {
    for (const GenerationStep& s : generation_steps(seq_, gen, logits, spec.get())) {
      if (s.text.empty()) continue;
      ans.text += s.text;
      if (on_text) on_text(s.text);
    }
  }
  if (spec) ans.speculative = spec->stats();
  ans.stop = gen.finish();
  ans.n_tokens = gen.n_generated();
  ans.seconds = seconds_since(t0);
  add_message("assistant", ans.text);
  return ans;
}

void ChatSession::reset() {
  messages_.clear();
  if (!params_.system_prompt.empty()) add_message("system", params_.system_prompt);
  seq_.clear();
}

bool ChatSession::save(const std::string& path) const {
  const std::string kv_path = path + kKvSuffix;
  const std::vector<int32_t>& cached = seq_.cached();
  bool kv_saved = false;
  // After a context shift the cache no longer holds the conversation's
  // tokens as one run: the messages alone are saved then.
  if (!cached.empty() && seq_.n_dropped() == 0) {
    try {
      ctx_.save_sequence(params_.seq, kv_path, cached);
      kv_saved = true;
    } catch (const InvalidArgument&) {
      // This context cannot save its cache: the messages alone are saved.
    }
  }
  chat::Json msgs = chat::Json::array();
  for (const ChatMessage& m : messages_) msgs.push_back({{"role", m.role}, {"content", m.content}});
  chat::Json doc = {{"format", kSavedChatFormat}, {"version", kSavedChatVersion}, {"messages", msgs}};
  if (kv_saved) doc["kv_state"] = std::filesystem::path(kv_path).filename().string();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw IoError(path, "cannot open for writing");
  out << doc.dump(2) << '\n';
  out.close();
  if (!out) throw IoError(path, "write failed");
  return kv_saved || cached.empty();
}

PrefillStats ChatSession::load(const std::string& path) {
  SavedChat saved = parse_saved_chat(path);
  std::vector<ChatMessage> previous = std::move(messages_);
  messages_ = std::move(saved.messages);
  PrefillStats stats;
  try {
    const std::vector<int32_t> prompt = messages_.empty() ? std::vector<int32_t>{} : tokenize(render(false));
    if (!params_.context_shift && static_cast<int64_t>(prompt.size()) > seq_.n_cells()) {
      throw InvalidArgument("the conversation (" + std::to_string(prompt.size()) +
                            " tokens) does not fit in the context (" + std::to_string(ctx_.n_ctx()) + " tokens)");
    }
    stats.kv_note = "no KV state saved; evaluated again";
    if (!saved.kv_path.empty()) {
      try {
        std::vector<int32_t> restored = ctx_.load_sequence(params_.seq, saved.kv_path);
        if (static_cast<int64_t>(restored.size()) != ctx_.cache().max_pos(params_.seq) + 1) {
          throw InvalidArgument("its tokens do not match its cells");
        }
        seq_.assume(std::move(restored));
        stats.kv_note = "KV state restored";
      } catch (const Error& e) {
        seq_.clear();  // left empty (or inconsistent) by the failure
        stats.kv_note = std::string("KV state not restored (") + e.what() + "); evaluated again";
      }
    }
    // Whatever of the conversation the cache lacks (at least the tail the
    // template closes the last message with) is evaluated; what it holds
    // past the conversation is dropped.
    const int64_t n = static_cast<int64_t>(prompt.size());
    const std::vector<int32_t>& cached = seq_.cached();
    const bool all_cached =
        n > 0 && static_cast<int64_t>(cached.size()) >= n && std::equal(prompt.begin(), prompt.end(), cached.begin()) &&
        ctx_.cache().can_continue(params_.seq, static_cast<int32_t>(n));
    if (all_cached) {
      ctx_.cache().remove(params_.seq, static_cast<int32_t>(n), -1);
      seq_.assume(prompt);
      stats.n_prompt = stats.n_reused = n;
    } else if (!prompt.empty()) {
      const std::string note = stats.kv_note;
      prefill(prompt, &stats);
      stats.kv_note = note;
    } else {
      seq_.clear();
    }
  } catch (...) {
    messages_ = std::move(previous);
    throw;
  }
  return stats;
}

}  // namespace ferrite::runtime
