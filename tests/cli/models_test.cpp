// Model management as ollama users know it: `list` (cache and search path:
// name, size, type, architecture, date), `show NAME`, `rm NAME` (cache files
// only), `ps` (the `ferrite serve` processes running). A private cache and
// search path (FERRITE_CACHE, FERRITE_MODELS_PATH) hold copies of shared models.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "support/test_data.h"

extern char** environ;

namespace ferrite::test {
namespace {

namespace fs = std::filesystem;

class ModelStore : public ::testing::Test {
 protected:
  void SetUp() override {
    FERRITE_SHARED_FILE(stories, "models/stories260K.gguf");
    FERRITE_SHARED_FILE(synth, "models/synth/synth-qwen2-f32.gguf");
    std::string pattern = (fs::temp_directory_path() / "ferrite-store-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
    fs::create_directories(root_ / "cache/someone/tiny-GGUF");
    fs::create_directories(root_ / "mine");
    fs::copy_file(stories, root_ / "cache/someone/tiny-GGUF/stories260K.gguf");
    fs::copy_file(synth, root_ / "mine/synth-qwen2-f32.gguf");
    ::setenv("FERRITE_CACHE", (root_ / "cache").c_str(), 1);
    ::setenv("FERRITE_MODELS_PATH", (root_ / "mine").c_str(), 1);
    ::setenv("FERRITE_OFFLINE", "1", 1);
  }
  void TearDown() override {
    ::unsetenv("FERRITE_CACHE");
    ::unsetenv("FERRITE_MODELS_PATH");
    ::unsetenv("FERRITE_OFFLINE");
    std::error_code ec;
    if (!root_.empty()) fs::remove_all(root_, ec);
  }
  fs::path root_;
};

TEST_F(ModelStore, ListNamesEveryModelWithItsFacts) {
  const CommandResult r = run_ferrite({"list"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("NAME"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("someone/tiny-GGUF:stories260K.gguf"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("synth-qwen2-f32.gguf"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("qwen2"), std::string::npos) << r.out;
  const CommandResult j = run_ferrite({"list", "--json"});
  ASSERT_EQ(j.status, 0) << j.err;
  const nlohmann::json models = nlohmann::json::parse(j.out);
  ASSERT_EQ(models.size(), 2u);
  EXPECT_EQ(models[0]["name"], "someone/tiny-GGUF:stories260K.gguf");
  EXPECT_EQ(models[0]["architecture"], "llama");
  EXPECT_EQ(models[0]["size"], fs::file_size(root_ / "cache/someone/tiny-GGUF/stories260K.gguf"));
  EXPECT_EQ(models[0]["source"], "cache");
  EXPECT_EQ(models[1]["architecture"], "qwen2");
  EXPECT_EQ(models[1]["type"], "F32");
  EXPECT_EQ(models[1]["source"], "models_path");
  EXPECT_GT(models[1]["modified"].get<long long>(), 0);
  // Every listed name resolves: show takes it.
  for (const auto& m : models) {
    const CommandResult s = run_ferrite({"show", m["name"].get<std::string>()});
    EXPECT_EQ(s.status, 0) << s.err;
    EXPECT_NE(s.out.find(m["architecture"].get<std::string>()), std::string::npos) << s.out;
  }
}

TEST_F(ModelStore, ShowSummarizesAModel) {
  const CommandResult r = run_ferrite({"show", "someone/tiny-GGUF:stories260K.gguf", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["architecture"], "llama");
  EXPECT_EQ(j["block_count"], 5);            // shared/README.md: 5 layers, dim 64
  EXPECT_EQ(j["embedding_length"], 64);
  EXPECT_EQ(j["vocab_size"], 512);
  EXPECT_NE(run_ferrite({"show", "no-such-model"}).status, 0);
}

TEST_F(ModelStore, RmDeletesCacheFilesOnly) {
  const CommandResult refused = run_ferrite({"rm", "synth-qwen2-f32.gguf"});
  EXPECT_EQ(refused.status, 1);
  EXPECT_NE(refused.err.find("not in the download cache"), std::string::npos) << refused.err;
  EXPECT_TRUE(fs::exists(root_ / "mine/synth-qwen2-f32.gguf"));
  const CommandResult r = run_ferrite({"rm", "someone/tiny-GGUF:stories260K.gguf"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(fs::exists(root_ / "cache/someone/tiny-GGUF/stories260K.gguf"));
  EXPECT_FALSE(fs::exists(root_ / "cache/someone"));  // emptied folders go
  EXPECT_TRUE(fs::exists(root_ / "cache"));
  EXPECT_EQ(run_ferrite({"list"}).out.find("stories260K"), std::string::npos);
  EXPECT_EQ(run_ferrite({"rm", "someone/tiny-GGUF:stories260K.gguf"}).status, 1);
}

// A `ferrite serve` started here, its stderr read up to the line that says
// it listens (the registry entry is written before that line).
class Server {
 public:
  explicit Server(const std::string& model) {
    int err_pipe[2];
    if (::pipe(err_pipe) != 0) throw std::runtime_error("pipe");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
    posix_spawn_file_actions_addclose(&fa, err_pipe[0]);
    std::vector<std::string> args = {FERRITE_BINARY, "serve", model, "--port", "0", "-t", "1", "--log-format", "none"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, FERRITE_BINARY, &fa, nullptr, argv.data(), environ) != 0) throw std::runtime_error("spawn");
    posix_spawn_file_actions_destroy(&fa);
    ::close(err_pipe[1]);
    err_ = err_pipe[0];
    std::string line;
    char c = 0;
    while (::read(err_, &c, 1) == 1) {
      if (c != '\n') {
        line += c;
        continue;
      }
      if (line.rfind("serving ", 0) == 0) {
        listening_ = line;
        break;
      }
      line.clear();
    }
  }
  ~Server() {
    stop();
    ::close(err_);
  }
  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = 0;
  }
  int pid() const { return pid_; }
  const std::string& listening() const { return listening_; }

 private:
  pid_t pid_ = 0;
  int err_ = -1;
  std::string listening_;
};

TEST_F(ModelStore, PsListsRunningServers) {
  EXPECT_EQ(nlohmann::json::parse(run_ferrite({"ps", "--json"}).out).size(), 0u);
  Server srv("someone/tiny-GGUF:stories260K.gguf");
  ASSERT_FALSE(srv.listening().empty()) << "the server did not start";
  const CommandResult r = run_ferrite({"ps", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json servers = nlohmann::json::parse(r.out);
  ASSERT_EQ(servers.size(), 1u) << r.out;
  EXPECT_EQ(servers[0]["pid"], srv.pid());
  EXPECT_EQ(servers[0]["model"], "stories260K.gguf");
  const std::string url = servers[0]["url"];
  EXPECT_NE(srv.listening().find(url), std::string::npos) << srv.listening() << " vs " << url;
  EXPECT_NE(run_ferrite({"ps"}).out.find(url), std::string::npos);
  srv.stop();
  EXPECT_EQ(nlohmann::json::parse(run_ferrite({"ps", "--json"}).out).size(), 0u);
}

}  // namespace
}  // namespace ferrite::test
