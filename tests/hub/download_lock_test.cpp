// Two downloads of the same file: the second waits on the .part's lock, then
// either finds the file finished or resumes what the first left.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <future>

#include <gtest/gtest.h>

#include "hub/download.h"
#include "hub_test_util.h"
#include "local_http_server.h"
#include "support/test_data.h"

namespace ferrite::hub {
namespace {

using test::LocalHttpServer;
using test::TempDir;

constexpr char kPath[] = "/o/r/resolve/main/stories260K.gguf";

class DownloadLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FERRITE_SHARED_FILE(path, "models/stories260K.gguf");
    bytes_ = test::read_file(path);
    LocalHttpServer::Route r;
    r.body = bytes_;
    server_.set_route(kPath, r);
    std::filesystem::create_directories(dest().parent_path());
    // Stand-in for another process downloading: an exclusively locked .part.
    holder_ = ::open(partial_path(dest()).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    ASSERT_GE(holder_, 0);
    ASSERT_EQ(flock(holder_, LOCK_EX), 0);
  }
  void TearDown() override {
    if (holder_ >= 0) ::close(holder_);
  }

  std::filesystem::path dest() const { return dir_ / "cache/stories260K.gguf"; }

  // Starts a download in another thread and returns once it waits on the lock.
  std::future<DownloadResult> start_waiting_download() {
    spec_.url = server_.base_url() + kPath;
    spec_.destination = dest();
    spec_.progress = ProgressMode::kSilent;
    spec_.notify = [this](const std::string& msg) {
      if (msg.find("waiting for another") != std::string::npos) waiting_.set_value();
    };
    auto fut = std::async(std::launch::async, [this] { return download_file(spec_); });
    waiting_.get_future().wait();
    return fut;
  }

  void write_holder(const std::string& data) {
    ASSERT_EQ(::pwrite(holder_, data.data(), data.size(), 0), static_cast<ssize_t>(data.size()));
  }

  std::string bytes_;
  TempDir dir_;
  LocalHttpServer server_;
  int holder_ = -1;
  DownloadSpec spec_;
  std::promise<void> waiting_;
};

TEST_F(DownloadLockTest, WaiterFindsTheFileTheHolderFinished) {
  auto fut = start_waiting_download();
  write_holder(bytes_);
  ASSERT_EQ(::rename(partial_path(dest()).c_str(), dest().c_str()), 0);
  ::close(holder_);  // releases the lock
  holder_ = -1;
  const DownloadResult r = fut.get();
  EXPECT_EQ(r.requests, 0);
  EXPECT_EQ(r.size, bytes_.size());
  EXPECT_EQ(test::read_file(dest()), bytes_);
  EXPECT_TRUE(server_.requests().empty());
  EXPECT_FALSE(std::filesystem::exists(partial_path(dest())));
}

TEST_F(DownloadLockTest, WaiterResumesWhatTheHolderLeft) {
  auto fut = start_waiting_download();
  const size_t kept = 300000;
  write_holder(bytes_.substr(0, kept));
  ::close(holder_);  // gives up without finishing
  holder_ = -1;
  const DownloadResult r = fut.get();
  EXPECT_EQ(r.resumed_from, kept);
  EXPECT_EQ(test::read_file(dest()), bytes_);
  ASSERT_EQ(server_.requests().size(), 1u);
  EXPECT_EQ(server_.requests()[0].range, "bytes=300000-");
}

}  // namespace
}  // namespace ferrite::hub
