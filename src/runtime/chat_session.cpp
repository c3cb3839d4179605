#include "runtime/chat_session.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
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

int64_t reusable_prefix(std::span<const int32_t> cached, std::span<const int32_t> wanted) {
  if (wanted.empty()) return 0;
  const size_t limit = std::min(cached.size(), wanted.size() - 1);
  size_t n = 0;
  while (n < limit && cached[n] == wanted[n]) ++n;
  return static_cast<int64_t>(n);
}

ChatSession::ChatSession(Context& ctx, const tokenizer::Tokenizer& tok, ChatSessionParams params)
    : ctx_(ctx),
      tok_(tok),
      params_(std::move(params)),
      template_(chat::Template::parse(params_.template_source)),
      bos_text_(special_text(tok, tok.bos())),
      eos_text_(special_text(tok, tok.eos())) {
  if (params_.seq < 0 || params_.seq >= kMaxSequences) {
    throw InvalidArgument("chat sequence id " + std::to_string(params_.seq) + " out of range");
  }
  if (params_.prefill_chunk <= 0) throw InvalidArgument("prefill chunk must be positive");
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

int64_t ChatSession::space_left() const { return ctx_.n_ctx() - ctx_.cache().used(); }

std::span<const float> ChatSession::prefill(std::span<const int32_t> tokens, PrefillStats* stats,
                                            const std::atomic<bool>* interrupt) {
  if (tokens.empty()) throw InvalidArgument("nothing to prefill");
  const auto t0 = Clock::now();
  const int64_t n = static_cast<int64_t>(tokens.size());
  const int64_t keep = reusable_prefix(cached_, tokens);
  // Cells free once the session's tail past `keep` is dropped.
  const int64_t available = space_left() + static_cast<int64_t>(cached_.size()) - keep;
  if (n - keep > available) {
    throw InvalidArgument("the conversation (" + std::to_string(n) + " tokens) does not fit in the context (" +
                          std::to_string(ctx_.n_ctx()) + " tokens)");
  }
  ctx_.cache().remove(params_.seq, static_cast<int32_t>(keep), -1);
  cached_.resize(static_cast<size_t>(keep));
  std::span<const float> logits;
  int64_t done = keep;
  try {
    while (done < n) {
      if (interrupt != nullptr && interrupt->load()) break;
      const int64_t len = std::min(params_.prefill_chunk, n - done);
      logits = ctx_.eval(tokens.subspan(static_cast<size_t>(done), static_cast<size_t>(len)), params_.seq);
      cached_.insert(cached_.end(), tokens.begin() + done, tokens.begin() + done + len);
      done += len;
    }
  } catch (...) {
    // Passes that went through stay in the cache.
    const int64_t held = ctx_.cache().max_pos(params_.seq) + 1;
    cached_.assign(tokens.begin(), tokens.begin() + std::clamp<int64_t>(held, keep, n));
    throw;
  }
  if (stats != nullptr) {
    stats->n_prompt = n;
    stats->n_reused = keep;
    stats->n_evaluated = done - keep;
    stats->seconds = seconds_since(t0);
  }
  return done == n ? logits : std::span<const float>();
}

std::span<const float> ChatSession::feed(int32_t token) {
  const int32_t one[1] = {token};
  std::span<const float> logits = ctx_.eval(one, params_.seq);
  cached_.push_back(token);
  return logits;
}

ChatAnswer ChatSession::respond(const std::string& user_text, sampling::Sampler& sampler,
                                const GenerateParams& params, const std::function<void(std::string_view)>& on_text) {
  add_message("user", user_text);
  ChatAnswer ans;
  std::span<const float> logits;
  try {
    const std::vector<int32_t> prompt = tokenize(render(/*add_generation_prompt=*/true));
    logits = prefill(prompt, &ans.prefill, params.interrupt);
    const int64_t end = ans.prefill.n_reused + ans.prefill.n_evaluated;
    for (int64_t i = ans.prefill.n_reused; i < end; ++i) {
      sampler.accept(prompt[static_cast<size_t>(i)], /*advance_constraint=*/false);
    }
  } catch (...) {
    pop_message();
    throw;
  }
  if (logits.empty()) {  // interrupted during the prefill
    pop_message();
    ans.stop = StopReason::kInterrupted;
    return ans;
  }

  const auto t0 = Clock::now();
  tokenizer::StreamDecoder decoder(tok_);
  const auto emit = [&](const std::string& s) {
    if (s.empty()) return;
    ans.text += s;
    if (on_text) on_text(s);
  };
  for (;;) {
    if (params.interrupt != nullptr && params.interrupt->load()) {
      ans.stop = StopReason::kInterrupted;
      break;
    }
    if (params.n_predict >= 0 && ans.n_tokens >= params.n_predict) {
      ans.stop = StopReason::kLength;
      break;
    }
    const int32_t next = sampler.sample(logits);
    if (!params.ignore_eos && tok_.is_eog(next)) {
      ans.stop = StopReason::kEndOfGeneration;
      break;
    }
    ++ans.n_tokens;
    emit(decoder.push(next));
    if (params.n_predict >= 0 && ans.n_tokens >= params.n_predict) {
      ans.stop = StopReason::kLength;  // the last token need not be evaluated
      break;
    }
    if (space_left() <= 0) {
      ans.stop = StopReason::kContextFull;
      break;
    }
    logits = feed(next);
  }
  emit(decoder.flush());
  ans.seconds = seconds_since(t0);
  add_message("assistant", ans.text);
  return ans;
}

void ChatSession::reset() {
  messages_.clear();
  if (!params_.system_prompt.empty()) add_message("system", params_.system_prompt);
  ctx_.cache().remove(params_.seq, 0, -1);
  cached_.clear();
}

bool ChatSession::save(const std::string& path) const {
  const std::string kv_path = path + kKvSuffix;
  bool kv_saved = false;
  if (!cached_.empty()) {
    try {
      ctx_.save_sequence(params_.seq, kv_path, cached_);
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
  return kv_saved || cached_.empty();
}

PrefillStats ChatSession::load(const std::string& path) {
  SavedChat saved = parse_saved_chat(path);
  std::vector<ChatMessage> previous = std::move(messages_);
  messages_ = std::move(saved.messages);
  PrefillStats stats;
  try {
    const std::vector<int32_t> prompt = messages_.empty() ? std::vector<int32_t>{} : tokenize(render(false));
    if (static_cast<int64_t>(prompt.size()) > ctx_.n_ctx()) {
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
        cached_ = std::move(restored);
        stats.kv_note = "KV state restored";
      } catch (const Error& e) {
        ctx_.cache().remove(params_.seq, 0, -1);  // left empty (or inconsistent) by the failure
        cached_.clear();
        stats.kv_note = std::string("KV state not restored (") + e.what() + "); evaluated again";
      }
    }
    // Whatever of the conversation the cache lacks (at least the tail the
    // template closes the last message with) is evaluated; what it holds
    // past the conversation is dropped.
    const int64_t n = static_cast<int64_t>(prompt.size());
    const bool all_cached =
        n > 0 && static_cast<int64_t>(cached_.size()) >= n && std::equal(prompt.begin(), prompt.end(), cached_.begin());
    if (all_cached) {
      ctx_.cache().remove(params_.seq, static_cast<int32_t>(n), -1);
      cached_.resize(static_cast<size_t>(n));
      stats.n_prompt = stats.n_reused = n;
    } else if (!prompt.empty()) {
      const std::string note = stats.kv_note;
      prefill(prompt, &stats);
      stats.kv_note = note;
    } else {
      ctx_.cache().remove(params_.seq, 0, -1);
      cached_.clear();
    }
  } catch (...) {
    messages_ = std::move(previous);
    throw;
  }
  return stats;
}

}  // namespace ferrite::runtime
