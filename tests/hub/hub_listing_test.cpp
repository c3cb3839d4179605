// owner/repo[:QUANT] (llama.cpp's -hf): the repository's file listing from a
// loopback server standing in for the hub, the file chosen by its quant tag
// (Q4_K_M by default), downloaded into the cache and found there afterwards
// without the network; a tag the repository lacks names the ones it has.
#include "hub/hub_listing.h"

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

constexpr char kListing[] = "/api/models/someone/tiny-GGUF/tree/main?recursive=true";

TEST(RepoQuant, ShapesAndParsing) {
  EXPECT_TRUE(looks_like_repo_quant("owner/repo"));
  EXPECT_TRUE(looks_like_repo_quant("owner/repo:Q4_K_M"));
  EXPECT_TRUE(looks_like_repo_quant("owner/repo@v2:q8_0"));
  EXPECT_FALSE(looks_like_repo_quant("owner/repo:model-Q4_K_M.gguf"));  // a file
  EXPECT_FALSE(looks_like_repo_quant("stories260K"));
  EXPECT_FALSE(looks_like_repo_quant("/abs/path"));
  EXPECT_FALSE(looks_like_repo_quant("a/b/c"));
  EXPECT_FALSE(looks_like_repo_quant("synth/model.gguf"));  // a path below a models folder
  const HfRepoQuant r = parse_repo_quant("owner/repo@v2:q8_0");
  EXPECT_EQ(r.repo, "owner/repo");
  EXPECT_EQ(r.revision, "v2");
  EXPECT_EQ(r.quant, "q8_0");
  EXPECT_THROW(parse_repo_quant("owner/re po:Q4"), InvalidArgument);
  EXPECT_THROW(parse_repo_quant("owner/repo:Q4;rm"), InvalidArgument);
}

TEST(RepoQuant, TagsOfFileNames) {
  EXPECT_EQ(quant_tag("Llama-3.2-1B-Instruct-Q4_K_M.gguf"), "Q4_K_M");
  EXPECT_EQ(quant_tag("model.q4_k_m.gguf"), "Q4_K_M");
  EXPECT_EQ(quant_tag("qwen2-7b-instruct-q8_0.gguf"), "Q8_0");
  EXPECT_EQ(quant_tag("m-IQ2_XXS.gguf"), "IQ2_XXS");
  EXPECT_EQ(quant_tag("m-Q4_K.gguf"), "Q4_K");
  EXPECT_EQ(quant_tag("big-Q5_K_S-00001-of-00003.gguf"), "Q5_K_S");
  EXPECT_EQ(quant_tag("m-f16.gguf"), "F16");
  EXPECT_EQ(quant_tag("README.md"), "");
}

TEST(RepoQuant, PicksTheFileOfTheTag) {
  const std::vector<RepoFile> files = {{"README.md", 10, ""},
                                       {"tiny-Q8_0.gguf", 100, ""},
                                       {"tiny-Q4_K_M.gguf", 50, ""},
                                       {"tiny-Q4_K_S.gguf", 48, ""},
                                       {"mmproj-tiny-f16.gguf", 20, ""},
                                       {"big/tiny-Q2_K-00001-of-00002.gguf", 30, ""},
                                       {"big/tiny-Q2_K-00002-of-00002.gguf", 30, ""}};
  EXPECT_EQ(pick_quant_file(files, parse_repo_quant("o/r:q8_0")).path, "tiny-Q8_0.gguf");
  EXPECT_EQ(pick_quant_file(files, parse_repo_quant("o/r")).path, "tiny-Q4_K_M.gguf");  // the default
  EXPECT_EQ(pick_quant_file(files, parse_repo_quant("o/r:Q2_K")).path, "big/tiny-Q2_K-00001-of-00002.gguf");
  try {
    pick_quant_file(files, parse_repo_quant("o/r:IQ3_M"));
    ADD_FAILURE() << "a missing tag was accepted";
  } catch (const InvalidArgument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("Q8_0"), std::string::npos) << what;
    EXPECT_NE(what.find("Q4_K_M"), std::string::npos) << what;
  }
  // Only one model file: it is the default whatever its tag.
  EXPECT_EQ(pick_quant_file({{"only-Q8_0.gguf", 1, ""}}, parse_repo_quant("o/r")).path, "only-Q8_0.gguf");
}

class RepoQuantPull : public ::testing::Test {
 protected:
  void SetUp() override {
    FERRITE_SHARED_FILE(path, "models/stories260K.gguf");
    bytes_ = test::read_file(path);
    LocalHttpServer::Route listing;
    listing.body = R"([{"type": "file", "path": "README.md", "size": 5},
                       {"type": "directory", "path": "sub"},
                       {"type": "file", "path": "tiny-F32.gguf", "size": )" +
                   std::to_string(bytes_.size()) +
                   R"(},
                       {"type": "file", "path": "tiny-Q8_0.gguf", "size": 3}])";
    server_.set_route(kListing, listing);
    LocalHttpServer::Route file;
    file.body = bytes_;
    server_.set_route("/someone/tiny-GGUF/resolve/main/tiny-F32.gguf", file);
  }
  HubConfig config() const {
    HubConfig c;
    c.cache_dir = dir_ / "cache";
    c.endpoint = server_.base_url();
    return c;
  }
  std::string bytes_;
  TempDir dir_;
  LocalHttpServer server_;
};

TEST_F(RepoQuantPull, TagPicksTheFileThenTheCacheAnswers) {
  const PullTarget t = resolve_pull_target("someone/tiny-GGUF:f32", config());
  EXPECT_EQ(t.file.file, "tiny-F32.gguf");
  EXPECT_EQ(t.size, bytes_.size());
  ResolveOptions quiet;
  quiet.progress = ProgressMode::kSilent;
  const std::filesystem::path p = resolve_model("someone/tiny-GGUF:F32", config(), quiet);
  EXPECT_EQ(p, dir_ / "cache/someone/tiny-GGUF/tiny-F32.gguf");
  EXPECT_EQ(test::read_file(p), bytes_);
  // Offline now: the cached file of that tag is found without the hub.
  HubConfig offline = config();
  offline.offline = true;
  offline.endpoint = "http://127.0.0.1:1";
  EXPECT_EQ(resolve_model("someone/tiny-GGUF:F32", offline, quiet), p);
  // The tag is never taken for a file name ("pull owner/repo:Q4_K_M" did).
  for (const auto& seen : server_.requests()) EXPECT_EQ(seen.path.find("resolve/main/F32"), std::string::npos);
}

TEST_F(RepoQuantPull, MissingTagListsWhatTheRepositoryHas) {
  try {
    resolve_pull_target("someone/tiny-GGUF:Q4_K_M", config());
    ADD_FAILURE() << "no Q4_K_M file, yet accepted";
  } catch (const InvalidArgument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("F32"), std::string::npos) << what;
    EXPECT_NE(what.find("Q8_0"), std::string::npos) << what;
  }
  EXPECT_THROW(resolve_pull_target("someone/missing-repo:Q4_K_M", config()), HttpError);
}

}  // namespace
}  // namespace ferrite::hub
