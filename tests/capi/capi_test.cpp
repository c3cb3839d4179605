// Runs the C checks (capi_checks.c, compiled as C against libferrite.so) on
// stories260K, with the llama2.c / llama.cpp greedy text as the golden.
#include <gtest/gtest.h>

#include <string>

#include "capi_checks.h"
#include "support/temp_dir.h"
#include "support/test_data.h"

namespace {

class CApi : public ::testing::Test {
 protected:
  void SetUp() override {
    FERRITE_SHARED_FILE(model, "models/stories260K.gguf");
    FERRITE_SHARED_FILE(golden, "models/stories260K.greedy200.txt");
    model_ = model.string();
    golden_path_ = golden.string();
    golden_ = ferrite::test::read_file(golden);
  }
  std::string model_, golden_path_, golden_;
};

#define EXPECT_PASSES(check)        \
  do {                              \
    const char* why = check;        \
    EXPECT_EQ(why, nullptr) << why; \
  } while (0)

TEST_F(CApi, GreedyGenerationMatchesTheGolden) { EXPECT_PASSES(capi_check_greedy(model_.c_str(), golden_.c_str())); }

TEST_F(CApi, ContextsShareOneModelAcrossThreads) { EXPECT_PASSES(capi_check_threads(model_.c_str(), golden_.c_str())); }

TEST_F(CApi, KvRemoveCopyShiftSaveLoadMatchRecomputation) {
  ferrite::test::TempDir dir;
  const std::string state = (dir.path() / "seq.state").string();
  EXPECT_PASSES(capi_check_kv(model_.c_str(), state.c_str()));
}

TEST_F(CApi, SamplerChainGrammarStopsAndChatTemplates) { EXPECT_PASSES(capi_check_sampling(model_.c_str())); }

TEST_F(CApi, EmbeddingsMode) { EXPECT_PASSES(capi_check_embeddings(model_.c_str())); }

TEST_F(CApi, EveryErrorPathReturnsACodeAndAMessage) {
  ferrite::test::TempDir dir;
  const std::string missing = (dir.path() / "missing.gguf").string();
  EXPECT_PASSES(capi_check_errors(model_.c_str(), golden_path_.c_str(), missing.c_str()));
}

}  // namespace
