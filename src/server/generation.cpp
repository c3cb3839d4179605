#include "server/generation.h"

#include <atomic>
#include <chrono>
#include <random>

#include "server/api_error.h"

namespace ferrite::server {

using json = nlohmann::ordered_json;

std::vector<std::shared_ptr<Task>> submit_tasks(Engine& engine, std::vector<GenerationParams> params) {
  std::vector<std::shared_ptr<Task>> tasks;
  for (GenerationParams& p : params) {
    auto t = std::make_shared<Task>(std::move(p));
    if (!engine.submit(t)) {
      cancel_all(tasks);
      throw ApiError(kStatusUnavailable, "server_error", "The server is busy (request queue full); retry later",
                     "", "queue_full");
    }
    tasks.push_back(std::move(t));
  }
  return tasks;
}

void cancel_all(const std::vector<std::shared_ptr<Task>>& tasks) {
  for (const auto& t : tasks) t->cancel();
}

void throw_for(const Event& ev) {
  if (ev.finish == FinishReason::Cancelled || ev.finish == FinishReason::None) {
    throw ApiError(kStatusUnavailable, "server_error",
                   ev.error.empty() ? std::string("the request was cancelled") : ev.error, "", "cancelled");
  }
  throw ApiError(kStatusInternal, "server_error", ev.error.empty() ? "generation failed" : ev.error);
}

Completion collect(Task& task) {
  Completion c;
  Event ev;
  while (task.next(ev)) {
    c.text += ev.text;
    for (TokenInfo& t : ev.tokens) c.tokens.push_back(std::move(t));
    if (ev.final) {
      if (ev.finish == FinishReason::Error || ev.finish == FinishReason::Cancelled) throw_for(ev);
      c.finish = ev.finish;
      c.stop_word = ev.stop_word;
      c.reply = std::move(ev.reply);
      c.timings = ev.timings;
      c.slot = ev.slot;
      c.embedding = std::move(ev.embedding);
      return c;
    }
  }
  Event none;
  none.finish = FinishReason::Cancelled;
  throw_for(none);
}

json timings_json(const Timings& t) {
  const int32_t evaluated = t.n_prompt - t.n_cached;
  json j = {{"prompt_n", evaluated}, {"cache_n", t.n_cached}, {"prompt_ms", t.prompt_ms},
            {"predicted_n", t.n_generated}, {"predicted_ms", t.generation_ms}};
  constexpr double kMsPerSecond = 1000.0;
  if (t.prompt_ms > 0) j["prompt_per_second"] = kMsPerSecond * evaluated / t.prompt_ms;
  // The first token comes with the prompt's evaluation; the time after it
  // produced the others.
  if (t.generation_ms > 0 && t.n_generated > 1) {
    j["predicted_per_second"] = kMsPerSecond * (t.n_generated - 1) / t.generation_ms;
  }
  if (t.n_drafted > 0) {  // with speculative decoding, as llama-server reports it
    j["draft_n"] = t.n_drafted;
    j["draft_n_accepted"] = t.n_draft_accepted;
  }
  return j;
}

json usage_json(int64_t prompt_tokens, int64_t completion_tokens, int64_t cached_tokens) {
  return {{"prompt_tokens", prompt_tokens},
          {"completion_tokens", completion_tokens},
          {"total_tokens", prompt_tokens + completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", cached_tokens}}}};
}

namespace {

json bytes_of(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(static_cast<int>(c));
  return b;
}

// The piece as valid JSON text (the dumper would throw on invalid UTF-8).
std::string safe_text(const std::string& s) {
  return json::parse(json(s).dump(-1, ' ', false, json::error_handler_t::replace)).get<std::string>();
}

}  // namespace

json chat_logprobs(const std::vector<TokenInfo>& tokens, const tokenizer::Tokenizer& tok) {
  json content = json::array();
  for (const TokenInfo& t : tokens) {
    json top = json::array();
    for (const auto& [id, lp] : t.top) {
      const std::string piece = tok.token_to_piece(id, false);
      top.push_back({{"token", safe_text(piece)}, {"logprob", lp}, {"bytes", bytes_of(piece)}});
    }
    content.push_back({{"token", safe_text(t.piece)}, {"logprob", t.logprob}, {"bytes", bytes_of(t.piece)},
                       {"top_logprobs", top}});
  }
  return {{"content", content}};
}

json completion_logprobs(const std::vector<TokenInfo>& tokens, const tokenizer::Tokenizer& tok, size_t text_offset) {
  json toks = json::array(), lps = json::array(), tops = json::array(), offs = json::array();
  size_t offset = text_offset;
  for (const TokenInfo& t : tokens) {
    toks.push_back(safe_text(t.piece));
    lps.push_back(t.logprob);
    json top = json::object();
    for (const auto& [id, lp] : t.top) top[safe_text(tok.token_to_piece(id, false))] = lp;
    tops.push_back(top);
    offs.push_back(offset);
    offset += t.piece.size();
  }
  return {{"tokens", toks}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offs}};
}

std::vector<GenerationParams> replicate(const GenerationParams& base, int n) {
  std::vector<GenerationParams> out(static_cast<size_t>(n), base);
  for (int i = 1; i < n; ++i) {
    if (base.sampling.seed != sampling::kRandomSeed) out[static_cast<size_t>(i)].sampling.seed = base.sampling.seed + static_cast<uint64_t>(i);
  }
  return out;
}

int64_t unix_time() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string new_id(const std::string& prefix) {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t base = std::random_device{}();
  char buf[32];
  std::snprintf(buf, sizeof buf, "%08llx%08llx", static_cast<unsigned long long>(base & 0xffffffffu),
                static_cast<unsigned long long>(counter.fetch_add(1)));
  return prefix + buf;
}

}  // namespace ferrite::server
