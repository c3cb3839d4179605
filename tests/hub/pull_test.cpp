// pull and automatic download through resolve_model, against a loopback
// server standing in for the Hugging Face hub.
#include "hub/pull.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "hub/errors.h"
#include "hub/resolve.h"
#include "hub_test_util.h"
#include "local_http_server.h"
#include "support/test_data.h"

namespace ferrite::hub {
namespace {

using test::LocalHttpServer;
using test::TempDir;

// Where the hub serves stories260K (see known_models.cpp).
constexpr char kStoriesUrlPath[] = "/ggml-org/models-moved/resolve/main/tinyllamas/stories260K.gguf";

class PullTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FERRITE_SHARED_FILE(path, "models/stories260K.gguf");
    bytes_ = test::read_file(path);
    LocalHttpServer::Route r;
    r.body = bytes_;
    server_.set_route(kStoriesUrlPath, r);
  }
  HubConfig config() const {
    HubConfig c;
    c.cache_dir = dir_ / "cache";
    c.endpoint = server_.base_url();
    return c;
  }
  std::filesystem::path cached_stories() const {
    return dir_ / "cache/ggml-org/models-moved/tinyllamas/stories260K.gguf";
  }
  PullOptions quiet() const {
    PullOptions o;
    o.progress = ProgressMode::kSilent;
    return o;
  }

  std::string bytes_;
  TempDir dir_;
  LocalHttpServer server_;
};

TEST_F(PullTest, KnownNameDownloadsIntoCacheOnce) {
  const PullResult first = pull(pull_target("stories260K"), config(), quiet());
  EXPECT_TRUE(first.downloaded);
  EXPECT_EQ(first.path, cached_stories());
  EXPECT_EQ(test::read_file(first.path), bytes_);
  const PullResult second = pull(pull_target("stories260K"), config(), quiet());
  EXPECT_FALSE(second.downloaded);
  EXPECT_EQ(second.path, first.path);
  EXPECT_EQ(server_.requests().size(), 1u);

  PullOptions force = quiet();
  force.force = true;
  EXPECT_TRUE(pull(pull_target("stories260K"), config(), force).downloaded);
  EXPECT_EQ(server_.requests().size(), 2u);
}

TEST_F(PullTest, HfReferenceDownloadsTheNamedFile) {
  LocalHttpServer::Route r;
  r.body = bytes_;
  server_.set_route("/someone/tiny/resolve/main/weights/model.gguf", r);
  const PullResult res = pull(pull_target("someone/tiny:weights/model.gguf"), config(), quiet());
  EXPECT_EQ(res.path, dir_ / "cache/someone/tiny/weights/model.gguf");
  EXPECT_EQ(test::read_file(res.path), bytes_);
}

TEST_F(PullTest, GivenChecksumIsEnforced) {
  PullOptions o = quiet();
  o.expected_sha256 = std::string(64, 'c');
  LocalHttpServer::Route r;
  r.body = bytes_;
  server_.set_route("/someone/tiny/resolve/main/model.gguf", r);
  EXPECT_THROW(pull(pull_target("someone/tiny:model.gguf"), config(), o), IntegrityError);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "cache/someone/tiny/model.gguf"));
  o.expected_sha256 = "not-hex";
  EXPECT_THROW(pull(pull_target("someone/tiny:model.gguf"), config(), o), InvalidArgument);
  // Contradicting the known checksum of a known name is refused up front.
  o.expected_sha256 = std::string(64, 'c');
  EXPECT_THROW(pull(pull_target("stories260K"), config(), o), InvalidArgument);
}

TEST_F(PullTest, CorruptServerCopyOfKnownModelIsRejected) {
  LocalHttpServer::Route r;
  r.body = bytes_;
  r.body[1000] ^= 1;
  server_.set_route(kStoriesUrlPath, r);
  EXPECT_THROW(pull(pull_target("stories260K"), config(), quiet()), IntegrityError);
  EXPECT_FALSE(std::filesystem::exists(cached_stories()));
  EXPECT_FALSE(std::filesystem::exists(partial_path(cached_stories())));
}

TEST_F(PullTest, UnknownNameIsInvalidArgument) {
  EXPECT_THROW(pull_target("no-such-model"), InvalidArgument);
  EXPECT_FALSE(find_pull_target("no-such-model"));
}

TEST_F(PullTest, ResolveDownloadsAKnownNameMissingLocally) {
  std::vector<std::string> notices;
  ResolveOptions o;
  o.progress = ProgressMode::kSilent;
  o.notify = [&](const std::string& n) { notices.push_back(n); };
  EXPECT_EQ(resolve_model("stories260K", config(), o), cached_stories());
  EXPECT_EQ(test::read_file(cached_stories()), bytes_);
  ASSERT_FALSE(notices.empty());
  EXPECT_NE(notices[0].find("downloading"), std::string::npos) << notices[0];
  // Now it is found in the cache without asking the server.
  EXPECT_EQ(resolve_model("stories260K", config(), o), cached_stories());
  EXPECT_EQ(server_.requests().size(), 1u);
}

TEST_F(PullTest, ResolveDoesNotDownloadUnknownNames) {
  EXPECT_THROW(resolve_model("mystery", config(), ResolveOptions{}), ModelNotFound);
  EXPECT_TRUE(server_.requests().empty());
}

TEST_F(PullTest, ResolveReportsMissingRemoteFile) {
  ResolveOptions o;
  o.progress = ProgressMode::kSilent;
  try {
    resolve_model("someone/tiny:absent.gguf", config(), o);
    FAIL() << "no exception";
  } catch (const HttpError& e) {
    EXPECT_EQ(e.status(), 404);
  }
}

// The copy in ../shared is found through FERRITE_MODELS_PATH, as in CI.
TEST_F(PullTest, SharedModelsFolderResolvesKnownNameWithoutDownload) {
  FERRITE_SHARED_FILE(models, "models");
  HubConfig c = config();
  c.models_path = {models};
  EXPECT_EQ(resolve_model("stories260K", c, ResolveOptions{}), models / "stories260K.gguf");
  EXPECT_TRUE(server_.requests().empty());
}

}  // namespace
}  // namespace ferrite::hub
