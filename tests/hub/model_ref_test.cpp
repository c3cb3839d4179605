#include "hub/model_ref.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/sha256.h"
#include "hub/known_models.h"
#include "support/test_data.h"

namespace ferrite::hub {
namespace {

TEST(HfFile, ParsesRepoAndPath) {
  const HfFile f = parse_hf_file("ggml-org/models-moved:tinyllamas/stories260K.gguf");
  EXPECT_EQ(f.repo, "ggml-org/models-moved");
  EXPECT_EQ(f.file, "tinyllamas/stories260K.gguf");
  EXPECT_EQ(f.revision, "main");
  EXPECT_EQ(f.to_string(), "ggml-org/models-moved:tinyllamas/stories260K.gguf");
}

TEST(HfFile, ParsesRevision) {
  const HfFile f = parse_hf_file("owner/repo@v1.2:model.gguf");
  EXPECT_EQ(f.repo, "owner/repo");
  EXPECT_EQ(f.revision, "v1.2");
  EXPECT_EQ(f.file, "model.gguf");
  EXPECT_EQ(f.to_string(), "owner/repo@v1.2:model.gguf");
  EXPECT_EQ(cache_relative_path(f), std::filesystem::path("owner/repo@v1.2/model.gguf"));
}

TEST(HfFile, RecognisesShape) {
  EXPECT_TRUE(looks_like_hf_file("a/b:c.gguf"));
  EXPECT_FALSE(looks_like_hf_file("stories260K"));
  EXPECT_FALSE(looks_like_hf_file("models/x.gguf"));
  EXPECT_FALSE(looks_like_hf_file("/abs/path:x"));
  EXPECT_FALSE(looks_like_hf_file("./a/b:c"));
  EXPECT_FALSE(looks_like_hf_file("a/b/c:d"));
  EXPECT_FALSE(looks_like_hf_file(":x"));
}

TEST(HfFile, RejectsPathsThatEscapeTheCache) {
  for (const char* bad : {"a/b:../x.gguf", "a/b:x/../../y", "a/b:/etc/passwd", "a/b:", "a/b:x//y", "a/..:x",
                          "a/b:x\\y", "a/b@:x", "a/b c:x", "a/b:./x"}) {
    EXPECT_THROW(parse_hf_file(bad), InvalidArgument) << bad;
  }
}

TEST(HfFile, BuildsResolveUrlWithPercentEncoding) {
  HfFile f{"o/r", "dir/a b+c.gguf", "main"};
  EXPECT_EQ(hf_resolve_url("https://huggingface.co/", f), "https://huggingface.co/o/r/resolve/main/dir/a%20b%2Bc.gguf");
  EXPECT_EQ(cache_relative_path(f), std::filesystem::path("o/r/dir/a b+c.gguf"));
}

TEST(KnownModels, FindsByNameCaseInsensitivelyWithOrWithoutSuffix) {
  const KnownModel* m = find_known_model("stories260K");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(find_known_model("STORIES260k.gguf"), m);
  EXPECT_EQ(m->repo, "ggml-org/models-moved");
  EXPECT_EQ(m->file, "tinyllamas/stories260K.gguf");
  EXPECT_EQ(find_known_model("stories260"), nullptr);
  EXPECT_EQ(find_known_model(".gguf"), nullptr);
}

TEST(KnownModels, EntriesAreWellFormed) {
  for (const KnownModel& m : known_models()) {
    EXPECT_NO_THROW(parse_hf_file(std::string(m.repo) + ":" + std::string(m.file))) << m.name;
    EXPECT_TRUE(m.sha256.empty() || m.sha256.size() == 64) << m.name;
  }
}

// The published checksum and size of stories260K describe the same bytes as
// the copy in ../shared (which llama.cpp's goldens were made from).
TEST(KnownModels, Stories260KChecksumMatchesSharedCopy) {
  FERRITE_SHARED_FILE(path, "models/stories260K.gguf");
  const std::string bytes = test::read_file(path);
  const KnownModel* m = find_known_model("stories260K");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(bytes.size(), m->size);
  EXPECT_EQ(Sha256::hex(bytes.data(), bytes.size()), m->sha256);
}

}  // namespace
}  // namespace ferrite::hub
