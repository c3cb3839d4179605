// Model resolution order: path, FERRITE_MODELS_PATH (one level of
// subfolders), the cache; and the errors when nothing matches.
#include "hub/resolve.h"

#include <stdlib.h>

#include <gtest/gtest.h>

#include "core/error.h"
#include "hub/errors.h"
#include "hub_test_util.h"

namespace ferrite::hub {
namespace {

using test::TempDir;
using test::write_file;

class ResolveTest : public ::testing::Test {
 protected:
  HubConfig config() const {
    HubConfig c;
    c.models_path = {dir_ / "a", dir_ / "b"};
    c.cache_dir = dir_ / "cache";
    c.endpoint = "http://127.0.0.1:9";  // never contacted: downloads are off in these tests
    return c;
  }
  ResolveOptions offline() const {
    ResolveOptions o;
    o.allow_download = false;
    o.progress = ProgressMode::kSilent;
    return o;
  }
  TempDir dir_;
};

TEST_F(ResolveTest, ExistingPathIsUsedAsIs) {
  const auto p = dir_ / "x/whatever.bin";
  write_file(p, "data");
  EXPECT_EQ(resolve_model(p.string(), config(), offline()), p);
}

TEST_F(ResolveTest, FolderIsNotAModel) {
  std::filesystem::create_directories(dir_ / "folder");
  EXPECT_THROW(resolve_model((dir_ / "folder").string(), config(), offline()), InvalidArgument);
}

TEST_F(ResolveTest, FindsNameWithAndWithoutSuffixInModelsPath) {
  write_file(dir_ / "b/tiny.gguf", "1");
  EXPECT_EQ(resolve_model("tiny", config(), offline()), dir_ / "b/tiny.gguf");
  EXPECT_EQ(resolve_model("tiny.gguf", config(), offline()), dir_ / "b/tiny.gguf");
}

TEST_F(ResolveTest, EarlierFolderWinsAndExactNameBeforeSuffix) {
  write_file(dir_ / "a/m.gguf", "1");
  write_file(dir_ / "b/m", "2");
  write_file(dir_ / "b/m.gguf", "3");
  EXPECT_EQ(resolve_model("m", config(), offline()), dir_ / "a/m.gguf");
  std::filesystem::remove(dir_ / "a/m.gguf");
  EXPECT_EQ(resolve_model("m", config(), offline()), dir_ / "b/m");
}

TEST_F(ResolveTest, SearchesOneLevelOfSubfolders) {
  write_file(dir_ / "a/synth/deep.gguf", "1");
  write_file(dir_ / "a/x/y/deeper.gguf", "1");
  EXPECT_EQ(resolve_model("deep", config(), offline()), dir_ / "a/synth/deep.gguf");
  EXPECT_EQ(resolve_model("synth/deep.gguf", config(), offline()), dir_ / "a/synth/deep.gguf");
  EXPECT_THROW(resolve_model("deeper", config(), offline()), ModelNotFound);
}

TEST_F(ResolveTest, ModelsPathComesBeforeCache) {
  write_file(dir_ / "cache/ggml-org/models-moved/tinyllamas/stories260K.gguf", "cached");
  EXPECT_EQ(resolve_model("stories260K", config(), offline()),
            dir_ / "cache/ggml-org/models-moved/tinyllamas/stories260K.gguf");
  write_file(dir_ / "b/stories260K.gguf", "local");
  EXPECT_EQ(resolve_model("stories260K", config(), offline()), dir_ / "b/stories260K.gguf");
}

TEST_F(ResolveTest, KnownNameIsCaseInsensitiveForTheCacheEntry) {
  write_file(dir_ / "cache/ggml-org/models-moved/tinyllamas/stories260K.gguf", "cached");
  EXPECT_EQ(resolve_model("STORIES260K.gguf", config(), offline()),
            dir_ / "cache/ggml-org/models-moved/tinyllamas/stories260K.gguf");
}

TEST_F(ResolveTest, HfReferenceFindsItsCacheEntry) {
  write_file(dir_ / "cache/owner/repo/sub/file.gguf", "x");
  EXPECT_EQ(resolve_model("owner/repo:sub/file.gguf", config(), offline()), dir_ / "cache/owner/repo/sub/file.gguf");
}

TEST_F(ResolveTest, PlainNameIsFoundAnywhereBelowTheCache) {
  write_file(dir_ / "cache/o/r/q/name.gguf", "x");
  write_file(dir_ / "cache/o/r/q/other.gguf.part", "x");
  EXPECT_EQ(resolve_model("name", config(), offline()), dir_ / "cache/o/r/q/name.gguf");
  EXPECT_THROW(resolve_model("other", config(), offline()), ModelNotFound);  // .part files never match
}

TEST_F(ResolveTest, NotFoundListsPlacesAndSuggestsPull) {
  try {
    resolve_model("nothing-here", config(), offline());
    FAIL() << "no exception";
  } catch (const ModelNotFound& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find((dir_ / "a").string()), std::string::npos) << msg;
    EXPECT_NE(msg.find((dir_ / "b").string()), std::string::npos) << msg;
    EXPECT_NE(msg.find((dir_ / "cache").string()), std::string::npos) << msg;
    EXPECT_NE(msg.find("nothing-here.gguf"), std::string::npos) << msg;
    EXPECT_NE(msg.find("ferrite pull"), std::string::npos) << msg;
  }
}

TEST_F(ResolveTest, KnownNameWithDownloadsOffSuggestsPullingIt) {
  HubConfig c = config();
  c.offline = true;
  try {
    resolve_model("stories260K", c, ResolveOptions{});
    FAIL() << "no exception";
  } catch (const ModelNotFound& e) {
    EXPECT_NE(std::string(e.what()).find("ferrite pull stories260K"), std::string::npos) << e.what();
  }
}

TEST_F(ResolveTest, MalformedReferenceIsInvalidArgument) {
  EXPECT_THROW(resolve_model("owner/repo:../escape.gguf", config(), offline()), InvalidArgument);
  EXPECT_THROW(resolve_model("", config(), offline()), InvalidArgument);
}

TEST_F(ResolveTest, MissingAbsolutePathIsNotFound) {
  EXPECT_THROW(resolve_model((dir_ / "none.gguf").string(), config(), offline()), ModelNotFound);
}

// Environment variables are read only by HubConfig::from_environment.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(HubConfig, ReadsEnvironment) {
  ScopedEnv models("FERRITE_MODELS_PATH", "/m1::/m2:");
  ScopedEnv cache("FERRITE_CACHE", "/c");
  ScopedEnv endpoint("FERRITE_HF_ENDPOINT", "http://127.0.0.1:8080/");
  ScopedEnv token("HF_TOKEN", "tok");
  ScopedEnv off("FERRITE_OFFLINE", "1");
  const HubConfig c = HubConfig::from_environment();
  ASSERT_EQ(c.models_path.size(), 2u);
  EXPECT_EQ(c.models_path[0], "/m1");
  EXPECT_EQ(c.models_path[1], "/m2");
  EXPECT_EQ(c.cache_dir, "/c");
  EXPECT_EQ(c.endpoint, "http://127.0.0.1:8080");
  EXPECT_EQ(c.token, "tok");
  EXPECT_TRUE(c.offline);
}

TEST(HubConfig, CacheFallsBackToXdgThenHome) {
  ScopedEnv cache("FERRITE_CACHE", nullptr);
  ScopedEnv endpoint("FERRITE_HF_ENDPOINT", nullptr);
  ScopedEnv hf_endpoint("HF_ENDPOINT", nullptr);
  ScopedEnv off("FERRITE_OFFLINE", "0");
  ScopedEnv hf_off("HF_HUB_OFFLINE", nullptr);
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "/x");
    EXPECT_EQ(HubConfig::from_environment().cache_dir, "/x/ferrite");
  }
  ScopedEnv xdg("XDG_CACHE_HOME", nullptr);
  ScopedEnv home("HOME", "/home/u");
  const HubConfig c = HubConfig::from_environment();
  EXPECT_EQ(c.cache_dir, "/home/u/.cache/ferrite");
  EXPECT_EQ(c.endpoint, "https://huggingface.co");
  EXPECT_FALSE(c.offline);
}

}  // namespace
}  // namespace ferrite::hub
