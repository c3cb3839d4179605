// llama-server compatibility (issue 24): slot save/restore, /infill's
// prompt, --embeddings on a decoder, /rerank's refusal and the metrics
// aliases.
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gguf/file.h"
#include "model/model.h"
#include "runtime/context.h"
#include "server/fim.h"
#include "server_fixture.h"
#include "tokenizer/tokenizer.h"

namespace ferrite::server::test {
namespace {

// A slot's cache saved, erased and restored: the restored cells serve the
// next request as its cached prefix, and the output is unchanged.
TEST(ServerCompat, SlotSaveEraseRestore) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("ferrite-slots-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  ServerConfig cfg;
  cfg.parallel = 1;
  cfg.server = [dir](ServerOptions& o) { o.slot_save_path = dir.string(); };
  FERRITE_TEST_SERVER(srv, cfg);
  const std::string prompt = golden_greedy_text().substr(0, 120);
  const Json req = {{"prompt", prompt}, {"n_predict", 8}, {"temperature", 0}};
  auto first = srv.post("/completion", req);
  ASSERT_EQ(first.first, 200) << first.second.dump();

  auto saved = srv.post("/slots/0?action=save", {{"filename", "s0.bin"}});
  ASSERT_EQ(saved.first, 200) << saved.second.dump();
  const int64_t n_saved = saved.second["n_saved"];
  EXPECT_GE(n_saved, first.second["tokens_evaluated"].get<int64_t>());
  EXPECT_TRUE(std::filesystem::exists(dir / "s0.bin"));
  EXPECT_EQ(saved.second["n_written"].get<uintmax_t>(), std::filesystem::file_size(dir / "s0.bin"));

  auto erased = srv.post("/slots/0?action=erase", Json::object());
  ASSERT_EQ(erased.first, 200);
  EXPECT_EQ(erased.second["n_erased"], n_saved);
  EXPECT_EQ(srv.get("/slots").second[0]["n_prompt_cached"], 0);

  auto restored = srv.post("/slots/0?action=restore", {{"filename", "s0.bin"}});
  ASSERT_EQ(restored.first, 200) << restored.second.dump();
  EXPECT_EQ(restored.second["n_restored"], n_saved);
  auto again = srv.post("/completion", req);
  ASSERT_EQ(again.first, 200);
  EXPECT_GT(again.second["tokens_cached"].get<int64_t>(), 0);
  EXPECT_EQ(again.second["content"], first.second["content"]);

  // Names stay inside the folder; bad names, slots and files are 4xx.
  EXPECT_EQ(srv.post("/slots/0?action=save", {{"filename", "../escape"}}).first, 400);
  EXPECT_EQ(srv.post("/slots/0?action=save", {{"filename", "a/b"}}).first, 400);
  EXPECT_EQ(srv.post("/slots/0?action=restore", {{"filename", "missing.bin"}}).first, 400);
  EXPECT_EQ(srv.post("/slots/7?action=save", {{"filename", "x"}}).first, 404);
  EXPECT_EQ(srv.post("/slots/0?action=explode", Json::object()).first, 400);
  EXPECT_FALSE(std::filesystem::exists(dir.parent_path() / "escape"));
  std::filesystem::remove_all(dir);

  // Without --slot-save-path nothing touches the disk.
  FERRITE_TEST_SERVER(off, ServerConfig{});
  EXPECT_EQ(off.post("/slots/0?action=save", {{"filename", "x"}}).first, 501);
}

// The FIM prompt is prefix-suffix-middle with the given token ids around
// the texts, which are tokenized without special tokens.
TEST(ServerCompat, InfillPromptOrderAndRefusalWithoutFimTokens) {
  FERRITE_SHARED_FILE(path, "models/stories260K.gguf");
  const gguf::File file = gguf::File::open(path.string());
  const tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_gguf(file);
  EXPECT_FALSE(find_fim_tokens(file, tok).usable());  // a story model has none
  const FimTokens fim{.pre = 100, .suf = 101, .mid = 102, .sep = -1};
  const std::vector<int32_t> ids = fim_prompt(tok, fim, "once", "the end", "upon", {});
  std::vector<int32_t> expect;
  if (tok.add_bos()) expect.push_back(tok.bos());
  const auto text = [&](const std::string& s) {
    std::vector<int32_t> t;
    tok.encode(s, false, false, t);
    return t;
  };
  expect.push_back(100);
  for (int32_t t : text("once")) expect.push_back(t);
  expect.push_back(101);
  for (int32_t t : text("the end")) expect.push_back(t);
  expect.push_back(102);
  for (int32_t t : text("upon")) expect.push_back(t);
  EXPECT_EQ(ids, expect);

  FERRITE_TEST_SERVER(srv, ServerConfig{});
  auto r = srv.post("/infill", {{"input_prefix", "a"}, {"input_suffix", "b"}});
  EXPECT_GE(r.first, 400);
  EXPECT_EQ(r.second["error"]["code"], "infill_not_supported") << r.second.dump();
}

// --embeddings: a decoder's mean-pooled hidden state, normalized, equal to
// what a runtime context with embeddings on gives for the same tokens.
TEST(ServerCompat, EmbeddingsFromADecoder) {
  ServerConfig cfg;
  cfg.server = [](ServerOptions& o) { o.embeddings = true; };
  cfg.engine = [](EngineOptions& e) { e.embeddings = true; };
  FERRITE_TEST_SERVER(srv, cfg);
  auto r = srv.post("/v1/embeddings", {{"input", {"once upon a time", "the end"}}});
  ASSERT_EQ(r.first, 200) << r.second.dump();
  ASSERT_EQ(r.second["data"].size(), 2u);
  const std::vector<float> a = r.second["data"][0]["embedding"];
  const std::vector<float> b = r.second["data"][1]["embedding"];

  auto model = model::Model::load(srv_model.string());
  ASSERT_EQ(static_cast<int64_t>(a.size()), model->hparams().n_embd);
  const tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_gguf(model->file());
  runtime::Context ctx(model, runtime::ContextParams{.n_ctx = 64, .n_batch = 64, .n_threads = 1, .embeddings = true,
                                                     .pooling_type = static_cast<int>(model::Pooling::Mean)});
  std::vector<int32_t> ids;
  tok.encode("once upon a time", true, false, ids);
  runtime::Batch batch;
  for (size_t i = 0; i < ids.size(); ++i) batch.add(ids[i], static_cast<int32_t>(i), 0, true);
  ctx.decode(batch);
  const std::span<const float> e = ctx.embeddings(0);
  double norm = 0;
  for (float v : e) norm += static_cast<double>(v) * v;
  norm = std::sqrt(norm);
  ASSERT_GT(norm, 0.0);
  double diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff = std::max(diff, std::abs(a[i] - e[i] / norm));
  EXPECT_LT(diff, 1e-5);
  EXPECT_NE(a, b);

  // Without the flag a decoder is refused clearly.
  FERRITE_TEST_SERVER(plain, ServerConfig{});
  auto no = plain.post("/v1/embeddings", {{"input", "x"}});
  EXPECT_EQ(no.first, 400);
  EXPECT_EQ(no.second["error"]["code"], "embeddings_not_supported");
}

TEST(ServerCompat, RerankRefusedAndMetricsAliases) {
  FERRITE_TEST_SERVER(srv, ServerConfig{});
  auto r = srv.post("/rerank", {{"query", "q"}, {"documents", {"a", "b"}}});
  EXPECT_EQ(r.first, 501);
  EXPECT_EQ(r.second["error"]["code"], "rerank_not_supported");
  EXPECT_EQ(srv.post("/v1/completions", {{"prompt", "x"}, {"max_tokens", 3}}).first, 200);
  auto res = srv.client().Get("/metrics");
  ASSERT_TRUE(res);
  for (const char* name : {"llamacpp:prompt_tokens_total", "llamacpp:tokens_predicted_total",
                           "llamacpp:requests_processing"}) {
    EXPECT_NE(res->body.find(name), std::string::npos) << name << " in\n" << res->body;
  }
}

}  // namespace
}  // namespace ferrite::server::test
