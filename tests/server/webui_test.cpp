// The chat page's routes (routes_webui.cpp): every file of src/server/webui
// served byte for byte from the binary with its type and ETag, revalidation,
// no API key needed for the page alone, unknown paths still 404, the
// browser protections still in front, and --no-webui. (The page itself is
// tested in Chromium: tests/server/webui/webui.test.mjs.)
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "server/routes.h"
#include "server_fixture.h"

namespace ferrite::server::test {
namespace {

namespace fs = std::filesystem;

const fs::path kWebUiDir = fs::path(FERRITE_SOURCE_DIR) / "src" / "server" / "webui";

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string type_of(const fs::path& p) {
  const std::string ext = p.extension().string();
  if (ext == ".html") return "text/html; charset=utf-8";
  if (ext == ".css") return "text/css; charset=utf-8";
  if (ext == ".js") return "text/javascript; charset=utf-8";
  if (ext == ".svg") return "image/svg+xml";
  return "";
}

TEST(ServerWebUi, ServesThePageAtTheRoot) {
  FERRITE_TEST_SERVER(srv, ServerConfig{});
  httplib::Client c = srv.client();
  const auto r = c.Get("/");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_EQ(r->body, read_file(kWebUiDir / "index.html"));
  EXPECT_EQ(r->get_header_value("Cache-Control"), "no-cache");
  EXPECT_EQ(r->get_header_value("X-Content-Type-Options"), "nosniff");
  EXPECT_NE(r->get_header_value("Content-Security-Policy").find("script-src 'self'"), std::string::npos);
  const auto same = c.Get("/webui/index.html");
  ASSERT_TRUE(same);
  EXPECT_EQ(same->body, r->body);
}

TEST(ServerWebUi, EveryFileIsServedAsWritten) {
  FERRITE_TEST_SERVER(srv, ServerConfig{});
  httplib::Client c = srv.client();
  int files = 0;
  for (const auto& entry : fs::directory_iterator(kWebUiDir)) {
    const std::string type = type_of(entry.path());
    if (type.empty()) continue;
    const std::string path = "/webui/" + entry.path().filename().string();
    const auto r = c.Get(path.c_str());
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 200) << path;
    EXPECT_EQ(r->get_header_value("Content-Type"), type) << path;
    EXPECT_EQ(r->body, read_file(entry.path())) << path;
    ++files;
  }
  EXPECT_GE(files, 3);
}

// What the page loads (its <script>/<link> and the modules' imports) is all
// served: a file renamed in one place only fails here.
TEST(ServerWebUi, EverythingThePageLoadsIsServed) {
  FERRITE_TEST_SERVER(srv, ServerConfig{});
  httplib::Client c = srv.client();
  std::set<std::string> wanted;
  const std::regex page_ref(R"re((?:src|href)="(/webui/[^"]+)")re");
  const std::string page = read_file(kWebUiDir / "index.html");
  for (std::sregex_iterator it(page.begin(), page.end(), page_ref), end; it != end; ++it) wanted.insert((*it)[1]);
  const std::regex import_ref(R"re(from '\./([^']+)')re");
  for (const auto& entry : fs::directory_iterator(kWebUiDir)) {
    if (entry.path().extension() != ".js") continue;
    const std::string js = read_file(entry.path());
    for (std::sregex_iterator it(js.begin(), js.end(), import_ref), end; it != end; ++it) {
      wanted.insert("/webui/" + (*it)[1].str());
    }
  }
  EXPECT_TRUE(wanted.count("/webui/app.js"));
  EXPECT_TRUE(wanted.count("/webui/style.css"));
  for (const std::string& path : wanted) {
    const auto r = c.Get(path.c_str());
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 200) << path;
  }
}

TEST(ServerWebUi, RevalidatesByETag) {
  FERRITE_TEST_SERVER(srv, ServerConfig{});
  httplib::Client c = srv.client();
  const auto first = c.Get("/webui/app.js");
  ASSERT_TRUE(first);
  const std::string etag = first->get_header_value("ETag");
  ASSERT_EQ(etag.size(), 18u);  // "16 hex digits"
  const auto again = c.Get("/webui/app.js", {{"If-None-Match", etag}});
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 304);
  EXPECT_EQ(again->body, "");
  EXPECT_EQ(again->get_header_value("ETag"), etag);
  const auto other = c.Get("/webui/app.js", {{"If-None-Match", "\"0000000000000000\""}});
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 200);
  EXPECT_EQ(other->body, first->body);
  // Files differ, so do their tags.
  const auto css = c.Get("/webui/style.css");
  ASSERT_TRUE(css);
  EXPECT_NE(css->get_header_value("ETag"), etag);
}

TEST(ServerWebUi, ETagMatching) {
  EXPECT_TRUE(etag_matches("\"abc\"", "\"abc\""));
  EXPECT_TRUE(etag_matches("W/\"abc\"", "\"abc\""));
  EXPECT_TRUE(etag_matches("\"x\", \"abc\"", "\"abc\""));
  EXPECT_TRUE(etag_matches("*", "\"abc\""));
  EXPECT_FALSE(etag_matches("", "\"abc\""));
  EXPECT_FALSE(etag_matches("\"abcd\"", "\"abc\""));
  EXPECT_FALSE(etag_matches("abc", "\"abc\""));
  EXPECT_FALSE(etag_matches(",,", "\"abc\""));
}

TEST(ServerWebUi, UnknownPathsStill404) {
  FERRITE_TEST_SERVER(srv, ServerConfig{});
  httplib::Client c = srv.client();
  for (const char* path : {"/nope", "/webui/", "/webui/nope.js", "/webui", "/index.htm", "/webui/../index.html",
                           "/webui/index.html/", "//"}) {
    const auto r = c.Get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 404) << path;
    EXPECT_EQ(r->get_header_value("Content-Type"), "application/json") << path;
  }
  const auto post = c.Post("/", "{}", "application/json");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 405);
}

// The page is served without the key (it asks for one); the API it calls
// still wants it.
TEST(ServerWebUi, PageNeedsNoKeyButTheApiDoes) {
  ServerConfig cfg;
  cfg.api_key = "sk-webui";
  FERRITE_TEST_SERVER(srv, cfg);
  httplib::Client c = srv.client();
  for (const char* path : {"/", "/webui/app.js", "/webui/style.css"}) {
    const auto r = c.Get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 200) << path;
  }
  EXPECT_EQ(srv.get("/v1/models").first, 401);
  EXPECT_EQ(srv.get("/props").first, 401);
  EXPECT_EQ(srv.get("/v1/models", "sk-webui").first, 200);
  EXPECT_EQ(srv.get("/nope").first, 404);
}

// The Host and Origin checks come before any route, the page's included.
TEST(ServerWebUi, BrowserProtectionsStillApply) {
  FERRITE_TEST_SERVER(srv, ServerConfig{});
  httplib::Client c = srv.client();
  const auto rebound = c.Get("/", {{"Host", "attacker.example:8080"}});
  ASSERT_TRUE(rebound);
  EXPECT_EQ(rebound->status, 403);
  const auto other_site = c.Get("/webui/app.js", {{"Origin", "https://attacker.example"}});
  ASSERT_TRUE(other_site);
  EXPECT_EQ(other_site->status, 403);
  const std::string own = "http://127.0.0.1:" + std::to_string(srv.port());
  const auto same_site = c.Get("/webui/app.js", {{"Origin", own}});
  ASSERT_TRUE(same_site);
  EXPECT_EQ(same_site->status, 200);
}

TEST(ServerWebUi, NoWebUiServesNothingThere) {
  ServerConfig cfg;
  cfg.server = [](ServerOptions& o) { o.webui = false; };
  FERRITE_TEST_SERVER(srv, cfg);
  httplib::Client c = srv.client();
  for (const char* path : {"/", "/webui/index.html", "/webui/app.js"}) {
    const auto r = c.Get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 404) << path;
  }
  EXPECT_EQ(srv.get("/health").first, 200);
}

// The last chunk of a streamed chat answer carries llama-server's timings,
// which agree with the usage chunk.
TEST(ServerWebUi, StreamedChatEndsWithTimings) {
  FERRITE_TEST_SERVER(srv, ServerConfig{});
  const Json body = {{"messages", Json::array({{{"role", "user"}, {"content", "Hello"}}})},
                     {"max_tokens", 8},
                     {"temperature", 0},
                     {"stream", true},
                     {"stream_options", {{"include_usage", true}}}};
  const std::vector<std::string> events = srv.stream("/v1/chat/completions", body);
  ASSERT_GE(events.size(), 3u);
  ASSERT_EQ(events.back(), "[DONE]");
  const Json usage = Json::parse(events[events.size() - 2]);
  const Json last = Json::parse(events[events.size() - 3]);
  EXPECT_EQ(last["choices"][0]["finish_reason"], "length");
  ASSERT_TRUE(last.contains("timings"));
  const Json& t = last["timings"];
  EXPECT_EQ(t["predicted_n"], 8);
  EXPECT_EQ(t["predicted_n"], usage["usage"]["completion_tokens"]);
  EXPECT_EQ(t["prompt_n"].get<int>() + t["cache_n"].get<int>(), usage["usage"]["prompt_tokens"].get<int>());
  EXPECT_GT(t["predicted_per_second"].get<double>(), 0.0);
  EXPECT_NEAR(t["predicted_per_second"].get<double>(), 7 * 1000.0 / t["predicted_ms"].get<double>(), 1e-6);
}

}  // namespace
}  // namespace ferrite::server::test
