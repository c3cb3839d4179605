// download_file against a loopback server serving ../shared's stories260K.
#include "hub/download.h"

#include <sys/resource.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "core/error.h"
#include "hub/errors.h"
#include "hub_test_util.h"
#include "local_http_server.h"
#include "support/test_data.h"

namespace ferrite::hub {
namespace {

using test::LocalHttpServer;
using test::TempDir;

constexpr char kModelPath[] = "/repo/resolve/main/stories260K.gguf";
// Published SHA-256 of stories260K.gguf (ggml-org/models-moved).
constexpr char kStoriesSha[] = "270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d";

class DownloadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FERRITE_SHARED_FILE(path, "models/stories260K.gguf");
    bytes_ = test::read_file(path);
  }

  LocalHttpServer::Route file_route() const {
    LocalHttpServer::Route r;
    r.body = bytes_;
    return r;
  }

  DownloadSpec spec(const std::string& url_path = kModelPath) const {
    DownloadSpec s;
    s.url = server_.base_url() + url_path;
    s.destination = dir_ / "cache/stories260K.gguf";
    s.progress = ProgressMode::kSilent;
    return s;
  }

  std::filesystem::path dest() const { return dir_ / "cache/stories260K.gguf"; }
  std::filesystem::path part() const { return partial_path(dest()); }

  std::string bytes_;
  TempDir dir_;
  LocalHttpServer server_;
};

TEST_F(DownloadTest, FullDownloadIsVerifiedAndRenamedIntoPlace) {
  server_.set_route(kModelPath, file_route());
  DownloadSpec s = spec();
  s.expected_sha256 = kStoriesSha;
  s.expected_size = bytes_.size();
  const DownloadResult r = download_file(s);
  EXPECT_EQ(r.path, dest());
  EXPECT_EQ(r.size, bytes_.size());
  EXPECT_EQ(r.sha256, kStoriesSha);
  EXPECT_EQ(r.resumed_from, 0u);
  EXPECT_EQ(r.requests, 1);
  EXPECT_EQ(test::read_file(dest()), bytes_);
  EXPECT_FALSE(std::filesystem::exists(part()));
  ASSERT_EQ(server_.requests().size(), 1u);
  EXPECT_EQ(server_.requests()[0].range, "");
}

TEST_F(DownloadTest, InterruptedTransferResumesWithRangeOnNextRun) {
  const size_t half = bytes_.size() / 2 + 123;
  auto route = file_route();
  route.drops = 1;
  route.drop_after = half;
  server_.set_route(kModelPath, route);

  DownloadSpec s = spec();
  s.expected_sha256 = kStoriesSha;
  s.max_attempts = 1;  // no automatic resumption: the first run fails
  EXPECT_THROW(download_file(s), NetworkError);
  EXPECT_FALSE(std::filesystem::exists(dest()));
  ASSERT_TRUE(std::filesystem::exists(part()));
  EXPECT_EQ(test::read_file(part()), bytes_.substr(0, half));

  const DownloadResult r = download_file(s);
  EXPECT_EQ(r.resumed_from, half);
  EXPECT_EQ(r.sha256, kStoriesSha);
  EXPECT_EQ(test::read_file(dest()), bytes_);
  EXPECT_FALSE(std::filesystem::exists(part()));
  const auto seen = server_.requests();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1].range, "bytes=" + std::to_string(half) + "-");
}

TEST_F(DownloadTest, DroppedConnectionIsResumedWithinOneRun) {
  auto route = file_route();
  route.drops = 2;
  route.drop_after = 100000;
  server_.set_route(kModelPath, route);
  DownloadSpec s = spec();
  s.expected_sha256 = kStoriesSha;
  s.max_attempts = 3;
  std::vector<std::string> notices;
  s.notify = [&](const std::string& n) { notices.push_back(n); };
  const DownloadResult r = download_file(s);
  EXPECT_EQ(r.requests, 3);
  EXPECT_EQ(test::read_file(dest()), bytes_);
  const auto seen = server_.requests();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].range, "");
  EXPECT_EQ(seen[1].range, "bytes=100000-");
  EXPECT_EQ(seen[2].range, "bytes=200000-");
  EXPECT_EQ(notices.size(), 2u);
}

TEST_F(DownloadTest, ServerIgnoringRangeRestartsFromZero) {
  auto route = file_route();
  route.honor_range = false;
  server_.set_route(kModelPath, route);
  test::write_file(part(), std::string(5000, 'x'));  // garbage that must not survive
  const DownloadResult r = download_file(spec());
  EXPECT_EQ(r.resumed_from, 5000u);
  EXPECT_EQ(test::read_file(dest()), bytes_);
  EXPECT_EQ(server_.requests().at(0).range, "bytes=5000-");
}

TEST_F(DownloadTest, CompletePartialFileIsCommittedWithoutBody) {
  server_.set_route(kModelPath, file_route());
  test::write_file(part(), bytes_);
  DownloadSpec s = spec();
  s.expected_sha256 = kStoriesSha;
  const DownloadResult r = download_file(s);  // server answers 416 bytes */size
  EXPECT_EQ(r.size, bytes_.size());
  EXPECT_EQ(test::read_file(dest()), bytes_);
}

TEST_F(DownloadTest, OverlongPartialFileIsDiscarded) {
  server_.set_route(kModelPath, file_route());
  test::write_file(part(), bytes_ + "extra bytes");
  const DownloadResult r = download_file(spec());
  EXPECT_EQ(r.requests, 2);  // 416, then a full download
  EXPECT_EQ(test::read_file(dest()), bytes_);
}

TEST_F(DownloadTest, NotFoundIsAnHttpErrorAndLeavesNothing) {
  try {
    download_file(spec("/repo/resolve/main/missing.gguf"));
    FAIL() << "no exception";
  } catch (const HttpError& e) {
    EXPECT_EQ(e.status(), 404);
    EXPECT_NE(std::string(e.what()).find("not found"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("Entry not found"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(dest()));
  EXPECT_FALSE(std::filesystem::exists(part()));
}

TEST_F(DownloadTest, UnauthorizedMentionsToken) {
  LocalHttpServer::Route r;
  r.status = 401;
  r.body = "Invalid username or password.";
  server_.set_route(kModelPath, r);
  try {
    download_file(spec());
    FAIL() << "no exception";
  } catch (const HttpError& e) {
    EXPECT_EQ(e.status(), 401);
    EXPECT_NE(std::string(e.what()).find("HF_TOKEN"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(part()));
}

TEST_F(DownloadTest, SendsBearerToken) {
  server_.set_route(kModelPath, file_route());
  DownloadSpec s = spec();
  s.bearer_token = "hf_test_token";
  download_file(s);
  EXPECT_EQ(server_.requests().at(0).authorization, "Bearer hf_test_token");
}

TEST_F(DownloadTest, TokenIsNotSentToAnotherHostAfterRedirect) {
  // Like the hub sending the client to its CDN: 127.0.0.1 redirects to
  // "localhost", another host name, which must not receive the token.
  server_.set_route("/cdn/blob", file_route());
  LocalHttpServer::Route redirect;
  const std::string port = server_.base_url().substr(server_.base_url().rfind(':') + 1);
  redirect.redirect_to = "http://localhost:" + port + "/cdn/blob";
  server_.set_route(kModelPath, redirect);
  DownloadSpec s = spec();
  s.bearer_token = "hf_secret";
  download_file(s);
  EXPECT_EQ(test::read_file(dest()), bytes_);
  const auto seen = server_.requests();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].authorization, "Bearer hf_secret");
  EXPECT_EQ(seen[1].path, "/cdn/blob");
  EXPECT_EQ(seen[1].authorization, "");
}

TEST_F(DownloadTest, ChecksumMismatchLeavesNoFile) {
  server_.set_route(kModelPath, file_route());
  DownloadSpec s = spec();
  s.expected_sha256 = std::string(64, '0');
  EXPECT_THROW(download_file(s), IntegrityError);
  EXPECT_FALSE(std::filesystem::exists(dest()));
  EXPECT_FALSE(std::filesystem::exists(part()));
}

TEST_F(DownloadTest, LinkedEtagFromRedirectIsChecked) {
  // Like the hub: the resolve URL redirects, advertising the file's SHA-256.
  auto bad = file_route();
  server_.set_route("/blob/bad", bad);
  LocalHttpServer::Route redirect;
  redirect.redirect_to = "/blob/bad";
  redirect.headers = {{"X-Linked-Etag", "\"" + std::string(64, 'a') + "\""}};
  server_.set_route(kModelPath, redirect);
  try {
    download_file(spec());
    FAIL() << "no exception";
  } catch (const IntegrityError& e) {
    EXPECT_NE(std::string(e.what()).find("X-Linked-Etag"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(dest()));
  EXPECT_FALSE(std::filesystem::exists(part()));

  redirect.headers = {{"X-Linked-Etag", std::string("\"") + kStoriesSha + "\""},
                      {"X-Linked-Size", std::to_string(bytes_.size())}};
  server_.set_route(kModelPath, redirect);
  EXPECT_EQ(download_file(spec()).sha256, kStoriesSha);
  EXPECT_EQ(test::read_file(dest()), bytes_);
}

TEST_F(DownloadTest, DirectSha256EtagIsChecked) {
  auto route = file_route();
  route.headers = {{"ETag", "\"" + std::string(64, 'b') + "\""}};
  server_.set_route(kModelPath, route);
  EXPECT_THROW(download_file(spec()), IntegrityError);
  EXPECT_FALSE(std::filesystem::exists(dest()));
}

TEST_F(DownloadTest, SizeMismatchIsRefused) {
  server_.set_route(kModelPath, file_route());
  DownloadSpec s = spec();
  s.expected_size = bytes_.size() + 1;
  EXPECT_THROW(download_file(s), IntegrityError);
  EXPECT_FALSE(std::filesystem::exists(dest()));
  EXPECT_FALSE(std::filesystem::exists(part()));
}

TEST_F(DownloadTest, ResumedBytesThatDoNotVerifyAreDownloadedAgain) {
  server_.set_route(kModelPath, file_route());
  test::write_file(part(), std::string(1000, 'z'));  // not a prefix of the file
  DownloadSpec s = spec();
  s.expected_sha256 = kStoriesSha;
  const DownloadResult r = download_file(s);
  EXPECT_EQ(r.resumed_from, 0u);  // the second, clean pass
  EXPECT_EQ(test::read_file(dest()), bytes_);
  const auto seen = server_.requests();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].range, "bytes=1000-");
  EXPECT_EQ(seen[1].range, "");
}

TEST_F(DownloadTest, RefusedConnectionIsANetworkError) {
  // A socket bound but not listening: connections to its port are refused.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  DownloadSpec s = spec();
  s.url = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + kModelPath;
  try {
    download_file(s);
    ::close(fd);
    FAIL() << "no exception";
  } catch (const NetworkError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot connect"), std::string::npos) << e.what();
  }
  ::close(fd);
  EXPECT_FALSE(std::filesystem::exists(part()));
}

// A write that fails (here a file size limit below the model's size, with
// SIGXFSZ ignored, so each write past it fails with EFBIG) is an IoError
// naming the cause, and nothing is left under the final name. (A .part
// planted as a link to /dev/full is refused before any write:
// UntrustedDownload.*.)
TEST_F(DownloadTest, WriteErrorIsAnIoError) {
  server_.set_route(kModelPath, file_route());
  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  ASSERT_TRUE(old.rlim_max == RLIM_INFINITY || old.rlim_max > 4096);
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit small = old;
  small.rlim_cur = 4096;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string error;
  try {
    download_file(spec());
  } catch (const IoError& e) {
    error = e.what();
  }
  setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_NE(error.find(std::strerror(EFBIG)), std::string::npos) << "error: '" << error << "'";
  EXPECT_FALSE(std::filesystem::exists(dest()));
}

TEST_F(DownloadTest, UnsupportedSchemeIsRefused) {
  DownloadSpec s = spec();
  s.url = "file:///etc/passwd";
  EXPECT_THROW(download_file(s), NetworkError);
  EXPECT_FALSE(std::filesystem::exists(dest()));
}

}  // namespace
}  // namespace ferrite::hub
