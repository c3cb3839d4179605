// The pieces of the HTTP front and the request checks, without sockets: the
// request reader's limits (issue 24 findings 1 and 2), the Host / Origin /
// Content-Type policy (finding 6) and the rate limiter. The guard that keeps
// message text from forging control tokens (finding 7) is tested in
// tests/runtime/prompt_text_test.cpp.
#include <string>

#include <gtest/gtest.h>

#include "server/http/request_reader.h"
#include "server/rate_limit.h"
#include "server/request_policy.h"

namespace ferrite::server {
namespace {

using http::ReaderLimits;
using http::RequestReader;
using Status = RequestReader::Status;

// Feeds `bytes` in pieces of `step`, proceeding past every header; returns
// the last status and leaves the reader where it stopped.
Status feed(RequestReader& r, const std::string& bytes, size_t step = SIZE_MAX) {
  std::string buf;
  Status s = Status::NeedMore;
  for (size_t at = 0; at < bytes.size();) {
    const size_t n = std::min(step, bytes.size() - at);
    buf.append(bytes, at, n);
    at += n;
    for (;;) {
      s = r.parse(buf);
      if (s == Status::Header) {
        r.proceed();
        continue;
      }
      break;
    }
    if (s == Status::Complete || s == Status::Failed) return s;
  }
  return s;
}

TEST(RequestReader, ReadsRequestsOneAfterAnother) {
  RequestReader r(ReaderLimits{});
  std::string buf =
      "GET /slots/0?action=save&x=a%20b HTTP/1.1\r\nHost: localhost\r\nX-Two: 2\r\n\r\n"
      "POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\n\r\nhello";
  ASSERT_EQ(r.parse(buf), Status::Header);
  EXPECT_EQ(r.request().path, "/slots/0");
  EXPECT_FALSE(r.has_body());
  r.proceed();
  ASSERT_EQ(r.parse(buf), Status::Complete);
  http::Request a = r.take();
  EXPECT_EQ(a.method, "GET");
  EXPECT_EQ(a.param("action"), "save");
  EXPECT_EQ(a.param("x"), "a b");
  EXPECT_EQ(a.header("x-two"), "2");
  ASSERT_EQ(r.parse(buf), Status::Header);
  EXPECT_TRUE(r.has_body());
  r.proceed();
  ASSERT_EQ(r.parse(buf), Status::Complete);
  EXPECT_EQ(r.take().body, "hello");
  EXPECT_TRUE(buf.empty());
  EXPECT_EQ(r.parse(buf), Status::NeedMore);
  EXPECT_FALSE(r.started());
}

TEST(RequestReader, ByteAtATimeGivesTheSameRequest) {
  const std::string req = "POST /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
                          "3\r\nabc\r\n4;ext=1\r\ndefg\r\n0\r\nTrailer: t\r\n\r\n";
  RequestReader r(ReaderLimits{});
  ASSERT_EQ(feed(r, req, 1), Status::Complete);
  EXPECT_EQ(r.take().body, "abcdefg");
}

TEST(RequestReader, HeaderBytesAndCountAreBounded) {
  ReaderLimits lim;
  lim.max_header_bytes = 1024;
  lim.max_header_count = 8;
  {
    RequestReader r(lim);
    // Headers that never end: refused once past the limit, whatever comes after.
    std::string huge = "GET / HTTP/1.1\r\n";
    for (int i = 0; i < 1000; ++i) {
      huge += "X-Filler-";  // appended piece by piece: GCC 12 warns (-Wrestrict) on "literal" + to_string
      huge += std::to_string(i);
      huge += ": " + std::string(40, 'v') + "\r\n";
    }
    ASSERT_EQ(feed(r, huge, 512), Status::Failed);
    EXPECT_EQ(r.error_status(), 431);
  }
  {
    RequestReader r(lim);
    std::string many = "GET / HTTP/1.1\r\n";
    for (int i = 0; i < 9; ++i) {
      many += 'A';
      many += std::to_string(i);
      many += ": 1\r\n";
    }
    ASSERT_EQ(feed(r, many + "\r\n"), Status::Failed);
    EXPECT_EQ(r.error_status(), 431);
  }
  {
    RequestReader r(lim);
    ASSERT_EQ(feed(r, "GET /" + std::string(2000, 'a') + " HTTP/1.1\r\n\r\n"), Status::Failed);
    EXPECT_EQ(r.error_status(), 431);
  }
}

TEST(RequestReader, BodyLimitHoldsForEveryTransferEncoding) {
  ReaderLimits lim;
  lim.max_body_bytes = 1000;
  {
    RequestReader r(lim);
    ASSERT_EQ(feed(r, "POST / HTTP/1.1\r\nContent-Length: 1001\r\n\r\n"), Status::Failed);
    EXPECT_EQ(r.error_status(), 413);
  }
  {
    // Chunked: refused when the chunks add up past the limit, without the
    // body ever being held (finding 1: 100 MB of chunks reached 2.65 GB).
    RequestReader r(lim);
    std::string body = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
    for (int i = 0; i < 200; ++i) body += "a\r\n0123456789\r\n";
    ASSERT_EQ(feed(r, body, 64), Status::Failed);
    EXPECT_EQ(r.error_status(), 413);
  }
  {
    RequestReader r(lim);
    ASSERT_EQ(feed(r, "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffff\r\n"), Status::Failed);
    EXPECT_EQ(r.error_status(), 413);
  }
  {
    // A chunk-size line (or chunk extension) that never ends.
    RequestReader r(lim);
    const std::string head = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5;";
    ASSERT_EQ(feed(r, head + std::string(40000, 'x'), 4096), Status::Failed);
    EXPECT_EQ(r.error_status(), 400);
  }
}

TEST(RequestReader, MalformedRequestsAreRefused) {
  for (const std::string& bad : {std::string("GARBAGE\r\n\r\n"), std::string("GET / HTTP/2.0\r\n\r\n"),
                                 std::string("GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n"),
                                 std::string("GET / HTTP/1.1\r\nBad Header\r\n\r\n"),
                                 std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11) + "\r\n\r\n"}) {
    RequestReader r(ReaderLimits{});
    EXPECT_EQ(feed(r, bad), Status::Failed) << bad;
    EXPECT_GE(r.error_status(), 400);
  }
  RequestReader r(ReaderLimits{});
  ASSERT_EQ(feed(r, "GET / HTTP/2.0\r\n\r\n"), Status::Failed);
  EXPECT_EQ(r.error_status(), 505);
}

http::Request with_headers(http::Headers h, int version = 11) {
  http::Request r;
  r.headers = std::move(h);
  r.version = version;
  return r;
}

TEST(RequestPolicy, HostMustBeLoopbackWhenListeningOnLoopback) {
  EXPECT_EQ(host_name("[::1]:8080"), "::1");
  EXPECT_EQ(host_name("LocalHost:80"), "localhost");
  EXPECT_EQ(host_name("evil.example"), "evil.example");
  EXPECT_TRUE(is_loopback_name("127.0.0.1"));
  EXPECT_TRUE(is_loopback_name("127.1.2.3"));
  EXPECT_TRUE(is_loopback_name("app.localhost"));
  EXPECT_FALSE(is_loopback_name("127.0.0.1.evil.example"));
  EXPECT_FALSE(is_loopback_name("localhost.evil.example"));
  EXPECT_TRUE(OriginPolicy::is_loopback_listen("127.0.0.1"));
  EXPECT_FALSE(OriginPolicy::is_loopback_listen("0.0.0.0"));

  const OriginPolicy loopback{true, {}};
  EXPECT_EQ(check_host(with_headers({{"Host", "127.0.0.1:8080"}}), loopback), "");
  EXPECT_EQ(check_host(with_headers({{"Host", "localhost"}}), loopback), "");
  // DNS rebinding: a page of evil.example whose name now resolves to us.
  EXPECT_NE(check_host(with_headers({{"Host", "evil.example:8080"}}), loopback), "");
  EXPECT_NE(check_host(with_headers({}), loopback), "");     // HTTP/1.1 needs a Host
  EXPECT_EQ(check_host(with_headers({}, 10), loopback), "");  // HTTP/1.0 may omit it
  const OriginPolicy open{false, {}};
  EXPECT_EQ(check_host(with_headers({{"Host", "evil.example"}}), open), "");
}

TEST(RequestPolicy, OriginsNeedCorsUnlessSameOrigin) {
  const OriginPolicy none{true, {}};
  EXPECT_EQ(check_origin(with_headers({{"Host", "localhost:8080"}}), none), OriginVerdict::None);
  EXPECT_EQ(check_origin(with_headers({{"Host", "localhost:8080"}, {"Origin", "http://localhost:8080"}}), none),
            OriginVerdict::Same);
  EXPECT_EQ(check_origin(with_headers({{"Host", "localhost:8080"}, {"Origin", "https://evil.example"}}), none),
            OriginVerdict::Refused);
  EXPECT_EQ(check_origin(with_headers({{"Host", "localhost:8080"}, {"Origin", "null"}}), none), OriginVerdict::Refused);
  const OriginPolicy cors{true, {"https://app.example"}};
  EXPECT_EQ(check_origin(with_headers({{"Host", "localhost"}, {"Origin", "https://app.example"}}), cors),
            OriginVerdict::Allowed);
  EXPECT_EQ(check_origin(with_headers({{"Host", "localhost"}, {"Origin", "https://other.example"}}), cors),
            OriginVerdict::Refused);
  const OriginPolicy any{true, {"*"}};
  EXPECT_EQ(check_origin(with_headers({{"Host", "localhost"}, {"Origin", "https://other.example"}}), any),
            OriginVerdict::Allowed);
}

TEST(RequestPolicy, OnlyJsonContentTypes) {
  EXPECT_TRUE(is_json_content_type("application/json"));
  EXPECT_TRUE(is_json_content_type("Application/JSON; charset=utf-8"));
  EXPECT_TRUE(is_json_content_type("application/vnd.api+json"));
  // What a page may send cross-origin without a preflight.
  EXPECT_FALSE(is_json_content_type("text/plain"));
  EXPECT_FALSE(is_json_content_type("text/plain;charset=UTF-8"));
  EXPECT_FALSE(is_json_content_type("application/x-www-form-urlencoded"));
  EXPECT_FALSE(is_json_content_type("multipart/form-data; boundary=x"));
  EXPECT_FALSE(is_json_content_type(""));
}

TEST(RateLimiter, BurstThenTheRate) {
  using Clock = RateLimiter::Clock;
  RateLimiter r(60.0, 3.0);  // one a second, bursts of 3
  const Clock::time_point t0 = Clock::now();
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(r.allow("k", t0));
  double retry = 0;
  EXPECT_FALSE(r.allow("k", t0, &retry));
  EXPECT_NEAR(retry, 1.0, 1e-6);
  EXPECT_TRUE(r.allow("other", t0));  // per key
  EXPECT_TRUE(r.allow("k", t0 + std::chrono::milliseconds(1001)));
  EXPECT_FALSE(r.allow("k", t0 + std::chrono::milliseconds(1002)));
  RateLimiter off(0.0, 1.0);
  for (int i = 0; i < 100; ++i) EXPECT_TRUE(off.allow("k", t0));
  // The table of keys stays bounded.
  RateLimiter small(60.0, 2.0, 16);
  for (int i = 0; i < 1000; ++i) small.allow("key" + std::to_string(i), t0);
  EXPECT_LE(small.keys(), 16u);
}

}  // namespace
}  // namespace ferrite::server
