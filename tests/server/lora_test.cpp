// LoRA adapters in the server: GET/POST /lora-adapters (llama-server's
// shapes), a request's `lora` field, the prefix cache keeping cells of other
// adapter scales apart, and slots with different adapters in one batch
// answering what each answers alone.
#include <future>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "convert/lora_writer.h"
#include "gguf/file.h"
#include "server_fixture.h"
#include "support/temp_dir.h"

namespace ferrite::server::test {
namespace {

class ServerLora : public ::testing::Test {
 protected:
  void SetUp() override {
    FERRITE_SHARED_FILE(model, "models/stories260K.gguf");
    const gguf::File f = gguf::File::open(model.string());
    // Strong enough to change the greedy text.
    convert::write_lora(convert::random_lora(f, {"attn_q.weight", "attn_v.weight", "ffn_up.weight"}, 4, 8.0f, 0.5f, 1),
                        a_);
    convert::write_lora(convert::random_lora(f, {"ffn_down.weight", "output.weight"}, 4, 8.0f, 0.5f, 2), b_);
  }
  static std::string text(const std::pair<int, Json>& r) {
    EXPECT_EQ(r.first, 200) << r.second.dump();
    return r.second["choices"][0]["text"];
  }
  static Json request(const Json& lora = nullptr) {
    Json j = {{"prompt", ""}, {"max_tokens", 30}, {"temperature", 0}};
    if (!lora.is_null()) j["lora"] = lora;
    return j;
  }
  static bool is_golden(const std::string& t) { return golden_greedy_text().compare(0, t.size(), t) == 0; }

  ferrite::test::TempDir dir_{"server-lora"};
  std::string a_ = dir_.file("a.gguf"), b_ = dir_.file("b.gguf");
};

TEST_F(ServerLora, ListAndSetScales) {
  ServerConfig cfg;
  cfg.lora = {a_, b_};
  cfg.lora_scales = {1.0f, 0.5f};
  FERRITE_TEST_SERVER(srv, cfg);
  auto [status, list] = srv.get("/lora-adapters");
  ASSERT_EQ(status, 200) << list.dump();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0]["id"], 0);
  EXPECT_EQ(list[0]["path"], a_);
  EXPECT_EQ(list[0]["scale"], 1.0);
  EXPECT_EQ(list[1]["id"], 1);
  EXPECT_EQ(list[1]["scale"], 0.5);
  auto [set_status, set] = srv.post("/lora-adapters", Json::array({{{"id", 1}, {"scale", 2.0}}}));
  ASSERT_EQ(set_status, 200) << set.dump();
  EXPECT_EQ(set["success"], true);
  list = srv.get("/lora-adapters").second;
  EXPECT_EQ(list[0]["scale"], 0.0);  // not listed: 0, as llama-server
  EXPECT_EQ(list[1]["scale"], 2.0);
  for (const Json& bad : {Json::object(), Json::array({{{"id", 2}, {"scale", 1}}}), Json::array({1}),
                          Json::array({{{"scale", 1}}}), Json::array({{{"id", 0}, {"scale", "x"}}})}) {
    EXPECT_EQ(srv.post("/lora-adapters", bad).first, 400) << bad.dump();
  }
  EXPECT_EQ(srv.post("/v1/completions", request(Json::array({{{"id", 5}, {"scale", 1}}}))).first, 400);
  EXPECT_EQ(srv.post("/v1/completions", request(Json{{"id", 0}})).first, 400);
}

TEST_F(ServerLora, RequestFieldAndDefaultScalesGiveTheSameText) {
  ServerConfig cfg;
  cfg.parallel = 1;
  cfg.lora = {a_};
  FERRITE_TEST_SERVER(on, cfg);  // scale 1 by default
  const std::string with = text(on.post("/v1/completions", request()));
  EXPECT_FALSE(is_golden(with)) << with;
  // The cache of the slot holds the adapter's cells: a request without the
  // adapter must not reuse them.
  const auto off = on.post("/v1/completions", request(Json::array()));
  EXPECT_TRUE(is_golden(text(off))) << off.second.dump();
  EXPECT_EQ(off.second["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  cfg.lora_scales = {0.0f};
  FERRITE_TEST_SERVER(init_off, cfg);  // --lora-init-without-apply
  EXPECT_TRUE(is_golden(text(init_off.post("/v1/completions", request()))));
  EXPECT_EQ(text(init_off.post("/v1/completions", request(Json::array({{{"id", 0}, {"scale", 1.0}}})))), with);
  ASSERT_EQ(init_off.post("/lora-adapters", Json::array({{{"id", 0}, {"scale", 1.0}}})).first, 200);
  EXPECT_EQ(text(init_off.post("/v1/completions", request())), with);
}

TEST_F(ServerLora, SlotsWithDifferentAdaptersShareBatches) {
  ServerConfig cfg;
  cfg.parallel = 2;
  cfg.lora = {a_, b_};
  cfg.lora_scales = {0.0f, 0.0f};
  FERRITE_TEST_SERVER(srv, cfg);
  const Json lora_a = Json::array({{{"id", 0}, {"scale", 1.0}}});
  const Json lora_b = Json::array({{{"id", 1}, {"scale", 1.0}}});
  const std::string alone_a = text(srv.post("/v1/completions", request(lora_a)));
  const std::string alone_b = text(srv.post("/v1/completions", request(lora_b)));
  EXPECT_NE(alone_a, alone_b);
  // A generates in one slot while B arrives: their tokens share the engine's batches.
  srv.gate().close();
  std::string streamed_a;
  std::thread a([&] {
    httplib::Client c = srv.client();
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    Json body = request(lora_a);
    body["stream"] = true;
    req.body = body.dump();
    req.set_header("Content-Type", "application/json");
    req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
      streamed_a.append(data, n);
      return true;
    };
    c.send(req);
  });
  // The engine may still be finishing B's last step (active 0 after it): held
  // after the one that read A's prompt, A generating.
  if (!srv.gate().hold_until([&] { return srv.engine().stats().active == 1; })) {
    srv.gate().open();
    a.join();
    FAIL() << "the engine did not start A";
  }
  auto b = std::async(std::launch::async, [&] { return srv.post("/v1/completions", request(lora_b)); });
  while (srv.engine().stats().queued == 0) std::this_thread::yield();  // the held engine cannot take B
  srv.gate().open();
  const auto rb = b.get();
  a.join();
  EXPECT_EQ(text(rb), alone_b);
  std::string got_a;
  for (const std::string& p : sse_payloads(streamed_a)) {
    if (p == "[DONE]") continue;
    got_a += Json::parse(p)["choices"][0]["text"].get<std::string>();
  }
  EXPECT_EQ(got_a, alone_a);
  EXPECT_GT(srv.engine().stats().busy_slot_steps, srv.engine().stats().steps);  // some steps held both slots
}

}  // namespace
}  // namespace ferrite::server::test
