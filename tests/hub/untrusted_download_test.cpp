// Downloads treated as untrusted (issue 24, finding 9): offline means no
// request at all (and no token sent), a planted .part link is never
// written through, what a server says reaches the terminal without control
// characters, and a download that nothing could verify says so.
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "hub/download.h"
#include "hub/errors.h"
#include "hub/progress.h"
#include "hub/pull.h"
#include "hub_test_util.h"
#include "local_http_server.h"
#include "support/test_data.h"

namespace ferrite::hub {
namespace {

using test::LocalHttpServer;
using test::TempDir;

constexpr char kPath[] = "/owner/repo/resolve/main/model.gguf";
constexpr char kStoriesSha[] = "270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d";

class UntrustedDownload : public ::testing::Test {
 protected:
  void SetUp() override {
    FERRITE_SHARED_FILE(path, "models/stories260K.gguf");
    bytes_ = test::read_file(path);
    LocalHttpServer::Route r;
    r.body = bytes_;
    server_.set_route(kPath, r);
  }
  DownloadSpec spec() const {
    DownloadSpec s;
    s.url = server_.base_url() + kPath;
    s.destination = dir_ / "cache/model.gguf";
    s.progress = ProgressMode::kSilent;
    return s;
  }
  std::filesystem::path dest() const { return dir_ / "cache/model.gguf"; }

  std::string bytes_;
  TempDir dir_;
  LocalHttpServer server_;
};

TEST_F(UntrustedDownload, OfflineSendsNothing) {
  HubConfig config;
  config.cache_dir = dir_ / "cache";
  config.endpoint = server_.base_url();
  config.token = "hf_secret";
  config.offline = true;
  PullOptions quiet;
  quiet.progress = ProgressMode::kSilent;
  const PullTarget target = pull_target("owner/repo:model.gguf");
  EXPECT_THROW(pull(target, config, quiet), OfflineError);
  quiet.force = true;
  EXPECT_THROW(pull(target, config, quiet), OfflineError);
  EXPECT_TRUE(server_.requests().empty());
  // A cached file is still found offline.
  test::write_file(cache_path(target, config), bytes_);
  quiet.force = false;
  EXPECT_FALSE(pull(target, config, quiet).downloaded);
  EXPECT_TRUE(server_.requests().empty());
}

TEST_F(UntrustedDownload, PlantedPartLinksAreNotFollowed) {
  const std::filesystem::path victim = dir_ / "victim.txt";
  test::write_file(victim, "precious");
  std::filesystem::create_directories(dest().parent_path());
  std::filesystem::create_symlink(victim, partial_path(dest()));
  EXPECT_THROW(download_file(spec()), IoError);
  EXPECT_EQ(test::read_file(victim), "precious");
  std::filesystem::remove(partial_path(dest()));
  // A hard link gives the victim a second name: refused too.
  std::filesystem::create_hard_link(victim, partial_path(dest()));
  EXPECT_THROW(download_file(spec()), IoError);
  EXPECT_EQ(test::read_file(victim), "precious");
  EXPECT_FALSE(std::filesystem::exists(dest()));
}

TEST_F(UntrustedDownload, ServerTextReachesTheTerminalWithoutControlCharacters) {
  EXPECT_EQ(terminal_safe("ok\x1b]0;pwned\x07 caf\xc3\xa9"), "ok?]0;pwned? caf\xc3\xa9");
  EXPECT_EQ(terminal_safe("\xc2\x9b" "31m"), "??31m");  // C1 CSI
  EXPECT_EQ(terminal_safe("\xff\xfe"), "??");
  EXPECT_EQ(terminal_safe(std::string(100, 'a'), 10), std::string(10, 'a') + "...");
  LocalHttpServer::Route r;
  r.status = 403;
  r.headers = {{"X-Error-Message", "denied \x1b[2J\x1b[31mrun rm -rf\x1b[0m"}};
  server_.set_route("/owner/repo/resolve/main/denied.gguf", r);
  DownloadSpec s = spec();
  s.url = server_.base_url() + "/owner/repo/resolve/main/denied.gguf";
  try {
    download_file(s);
    FAIL() << "no exception";
  } catch (const HttpError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.find('\x1b'), std::string::npos) << msg;
    EXPECT_NE(msg.find("run rm -rf"), std::string::npos) << msg;
  }
}

TEST_F(UntrustedDownload, UnverifiedDownloadsAreReported) {
  std::vector<std::string> notes;
  DownloadSpec s = spec();
  s.notify = [&](const std::string& line) { notes.push_back(line); };
  const DownloadResult unchecked = download_file(s);
  EXPECT_EQ(unchecked.verified_by, "");
  ASSERT_FALSE(notes.empty());
  EXPECT_NE(notes.back().find("unverified"), std::string::npos) << notes.back();
  EXPECT_NE(notes.back().find(kStoriesSha), std::string::npos) << notes.back();

  std::filesystem::remove(dest());
  notes.clear();
  s.expected_sha256 = kStoriesSha;
  const DownloadResult checked = download_file(s);
  EXPECT_EQ(checked.verified_by, "the expected checksum");
  for (const std::string& n : notes) EXPECT_EQ(n.find("unverified"), std::string::npos) << n;
}

}  // namespace
}  // namespace ferrite::hub
