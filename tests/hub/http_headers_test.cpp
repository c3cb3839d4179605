#include "hub/http_headers.h"

#include <gtest/gtest.h>

namespace ferrite::hub {
namespace {

TEST(HttpHeaders, ParsesContentRange) {
  auto r = parse_content_range("bytes 100-199/1000");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->first, 100u);
  EXPECT_EQ(r->last, 199u);
  EXPECT_EQ(r->total, 1000u);
  EXPECT_FALSE(r->unsatisfied);

  r = parse_content_range("bytes */1185376");
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->unsatisfied);
  EXPECT_EQ(r->total, 1185376u);

  r = parse_content_range("bytes 0-9/*");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->total, 0u);
}

TEST(HttpHeaders, RejectsMalformedContentRange) {
  for (const char* bad : {"", "bytes", "items 0-1/2", "bytes 5-4/10", "bytes 0-10/10", "bytes -1-2/3", "bytes 0-1",
                          "bytes a-b/c", "bytes 0-99999999999999999999/1"}) {
    EXPECT_FALSE(parse_content_range(bad)) << bad;
  }
}

TEST(HttpHeaders, ParsesSizes) {
  EXPECT_EQ(parse_size(" 1185376\r\n"), 1185376u);
  EXPECT_EQ(parse_size("18446744073709551615"), UINT64_MAX);
  EXPECT_FALSE(parse_size("18446744073709551616"));
  EXPECT_FALSE(parse_size("-1"));
  EXPECT_FALSE(parse_size("12a"));
  EXPECT_FALSE(parse_size(""));
}

TEST(HttpHeaders, ExtractsSha256FromEtag) {
  const std::string sha = "270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d";
  EXPECT_EQ(parse_sha256_etag("\"" + sha + "\""), sha);
  EXPECT_EQ(parse_sha256_etag("W/\"270CBA1BD5109F42D03350F60406024560464DB173C0E387D91F0426D3BD256D\""), sha);
  EXPECT_FALSE(parse_sha256_etag("\"da39a3ee5e6b4b0d3255bfef95601890afd80709\""));  // git SHA-1
  EXPECT_FALSE(parse_sha256_etag("\"d41d8cd98f00b204e9800998ecf8427e\""));          // MD5
  EXPECT_FALSE(parse_sha256_etag("\"" + std::string(63, 'a') + "g\""));
}

TEST(HttpHeaders, ChainKeepsLinkedHeadersAcrossRedirects) {
  ChainHeaders h;
  h.add_line("HTTP/1.1 302 Found\r\n");
  h.add_line("X-Linked-Etag: \"abc\"\r\n");
  h.add_line("x-linked-size: 42\r\n");
  h.add_line("Location: https://cdn/x\r\n");
  EXPECT_EQ(h.last.status, 302);
  h.add_line("HTTP/2 206\r\n");
  h.add_line("content-range: bytes 10-41/42\r\n");
  h.add_line("Content-Length: 32\r\n");
  h.add_line("ETag: \"cdn-etag\"\r\n");
  EXPECT_EQ(h.last.status, 206);
  EXPECT_EQ(h.last.content_length, 32u);
  ASSERT_TRUE(h.last.content_range);
  EXPECT_EQ(h.last.content_range->first, 10u);
  EXPECT_EQ(h.last.etag, "\"cdn-etag\"");
  EXPECT_EQ(h.linked_etag, "\"abc\"");
  EXPECT_EQ(h.linked_size, 42u);
}

}  // namespace
}  // namespace ferrite::hub
