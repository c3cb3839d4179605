// The `ferrite run` and `ferrite perplexity` commands end to end (the binary
// is built with the tests; FERRITE_BINARY is its path).
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "support/test_data.h"

namespace ferrite {
namespace {

struct Result {
  int status;
  std::string out;
};

Result run_command(const std::string& cmd) {
  Result r{0, {}};
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return {-1, {}};
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  r.status = pclose(p);
  return r;
}

// Greedy generation from BOS prints llama2.c's (and llama.cpp's) story.
TEST(RunCommand, Stories260KGreedyStory) {
  FERRITE_SHARED_FILE(model_path, "models/stories260K.gguf");
  FERRITE_SHARED_FILE(story_path, "models/stories260K.greedy200.txt");
  const Result r = run_command(std::string(FERRITE_BINARY) + " run -m " + model_path.string() +
                               " -p '' -n 200 --temp 0 -t 2 2>/dev/null");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, test::read_file(story_path));
}

TEST(RunCommand, BadArgumentsFailCleanly) {
  FERRITE_SHARED_FILE(model_path, "models/stories260K.gguf");
  const std::string bin = FERRITE_BINARY;
  EXPECT_NE(run_command(bin + " run -m /nonexistent.gguf -p hi 2>/dev/null").status, 0);
  // Without context shift, more tokens than the context holds are refused.
  EXPECT_NE(run_command(bin + " run -m " + model_path.string() + " -p hi -n 5000 -c 64 --no-context-shift 2>/dev/null")
                .status,
            0);
  // -n takes -1 (no limit) and -2 (until the context is full), as llama.cpp's, and nothing below.
  EXPECT_NE(run_command(bin + " run -m " + model_path.string() + " -p hi -n -3 2>/dev/null").status, 0);
}

// llama.cpp's llama-perplexity -c 128 on the first 60,000 bytes of War and
// Peace gives 45.1979.
TEST(PerplexityCommandSlow, Stories260KWarAndPeace) {
  FERRITE_SHARED_FILE(model_path, "models/stories260K.gguf");
  FERRITE_SHARED_FILE(text_path, "text/war-and-peace.txt");
  const std::string text = test::read_file(text_path).substr(0, 60000);
  const std::filesystem::path tmp =
      std::filesystem::temp_directory_path() / ("ferrite-ppl-" + std::to_string(::getpid()) + ".txt");
  std::ofstream(tmp, std::ios::binary) << text;
  const Result r = run_command(std::string(FERRITE_BINARY) + " perplexity -m " + model_path.string() + " -f " +
                               tmp.string() + " -c 128 -t 2 2>/dev/null");
  std::filesystem::remove(tmp);
  ASSERT_EQ(r.status, 0);
  const size_t at = r.out.find("PPL = ");
  ASSERT_NE(at, std::string::npos) << r.out;
  const double ppl = std::stod(r.out.substr(at + 6));
  EXPECT_NEAR(ppl, 45.1979, 0.01);
}

}  // namespace
}  // namespace ferrite
