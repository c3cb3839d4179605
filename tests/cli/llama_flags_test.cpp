// llama.cpp's command line on ferrite's commands, table-driven: each row is a
// command, a llama.cpp option with a value of its kind, and whether ferrite
// implements it there. An implemented option parses (the run then fails for
// the missing model, status 1, never 2); one ferrite does not implement is
// refused with "not supported: FLAG" and status 2 (never misread: -fa was
// "-f a", -cnv was "-c nv", -sys was "-s ys", -mg was "-m g"). Then the
// meanings: -ngl on a CPU build warns and runs, -sys starts a conversation,
// the model as first argument or -m; and the usage rules: bare `ferrite` and
// `ferrite help` list the commands, an unknown command gets "did you mean",
// --version names version, commit, backends and instruction sets.
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli_util.h"
#include "support/test_data.h"

namespace ferrite::test {
namespace {

constexpr const char* kNoModel = "/nonexistent/ferrite-flags-test.gguf";

struct FlagCase {
  const char* command;
  std::vector<std::string> args;  // the option and its value
  bool implemented;
};

// clang-format off
const FlagCase kCases[] = {
    // llama-cli -> run
    {"run", {"-fa"}, true}, {"run", {"--flash-attn"}, true}, {"run", {"-cnv"}, true}, {"run", {"--conversation"}, true},
    {"run", {"-i"}, true}, {"run", {"-if"}, true}, {"run", {"-no-cnv"}, true}, {"run", {"-r", "STOP"}, true},
    {"run", {"--reverse-prompt", "STOP"}, true}, {"run", {"--color"}, true}, {"run", {"-co"}, true},
    {"run", {"-e"}, true}, {"run", {"--no-escape"}, true}, {"run", {"-sys", "Be brief."}, true},
    {"run", {"--system-prompt", "Be brief."}, true}, {"run", {"-ngl", "99"}, true}, {"run", {"--gpu-layers", "99"}, true},
    {"run", {"--n-gpu-layers", "99"}, true}, {"run", {"-ctk", "q8_0"}, true}, {"run", {"-ctv", "q8_0"}, true},
    {"run", {"--mlock"}, true}, {"run", {"--no-mmap"}, true}, {"run", {"-mg", "0"}, true},
    {"run", {"--prompt-cache", "/tmp/ferrite-pc"}, true}, {"run", {"--prompt-cache-all"}, true},
    {"run", {"--prompt-cache-ro"}, true}, {"run", {"-n", "-1"}, true}, {"run", {"--predict", "16"}, true},
    {"run", {"--keep", "4"}, true}, {"run", {"--no-context-shift"}, true}, {"run", {"-c", "256"}, true},
    {"run", {"-b", "64"}, true}, {"run", {"-t", "2"}, true}, {"run", {"-s", "7"}, true}, {"run", {"--temp", "0.5"}, true},
    {"run", {"--top-k", "5"}, true}, {"run", {"--typical", "0.9"}, true}, {"run", {"--mirostat", "2"}, true},
    {"run", {"--dry-multiplier", "0.5"}, true}, {"run", {"--xtc-probability", "0.5"}, true},
    {"run", {"-l", "15+1"}, true}, {"run", {"-j", "{}"}, true}, {"run", {"--ignore-eos"}, true},
    {"run", {"--chat-template", "chatml"}, true}, {"run", {"-hf", "owner/repo:Q4_K_M"}, true},
    {"run", {"-hfr", "owner/repo"}, true}, {"run", {"--jinja"}, true}, {"run", {"-md", "draft.gguf"}, true},
    {"run", {"-ngld", "99"}, true}, {"run", {"--draft-max", "8"}, true}, {"run", {"--draft-p-min", "0.5"}, true},
    {"run", {"-cd", "512"}, true},
    {"run", {"--lora", "x.gguf"}, true}, {"run", {"--lora-scaled", "x.gguf", "0.5"}, true},
    {"run", {"-np", "2"}, false}, {"run", {"-ub", "256"}, false},
    {"run", {"--rope-scaling", "yarn"}, false}, {"run", {"-dev", "CUDA0"}, false}, {"run", {"-C", "ff"}, false},
    {"run", {"-sm", "row"}, false}, {"run", {"-ts", "1,1"}, false}, {"run", {"-nkvo"}, false},
    {"run", {"--numa", "distribute"}, false}, {"run", {"-ptc", "10"}, false},
    {"run", {"-dt", "0.1"}, false}, {"run", {"-tb", "2"}, false}, {"run", {"-sp"}, false},
    // llama-cli conversation -> chat
    {"chat", {"-cnv"}, true}, {"chat", {"-i"}, true}, {"chat", {"-sys", "Be brief."}, true}, {"chat", {"-ngl", "99"}, true},
    {"chat", {"-ctk", "q4_0"}, true}, {"chat", {"-fa"}, true}, {"chat", {"--keep", "8"}, true},
    {"chat", {"-r", "User:"}, true}, {"chat", {"--mlock"}, true}, {"chat", {"-np", "2"}, false},
    {"chat", {"--in-prefix", "x"}, false},
    // llama-server -> serve
    {"serve", {"-np", "4"}, true}, {"serve", {"--parallel", "4"}, true}, {"serve", {"-ngl", "99"}, true},
    {"serve", {"-ctk", "q8_0"}, true}, {"serve", {"-ctv", "q8_0"}, true}, {"serve", {"-fa"}, true},
    {"serve", {"--mlock"}, true}, {"serve", {"--no-mmap"}, true}, {"serve", {"-a", "name"}, true},
    {"serve", {"-to", "30"}, true}, {"serve", {"--no-context-shift"}, true}, {"serve", {"-cb"}, true},
    {"serve", {"--host", "127.0.0.1"}, true}, {"serve", {"--port", "0"}, true}, {"serve", {"-hf", "owner/repo"}, true},
    {"serve", {"--chat-template-file", "t.jinja"}, true}, {"serve", {"-md", "draft.gguf"}, true},
    {"serve", {"--draft-min", "2"}, true}, {"serve", {"--no-webui"}, true}, {"serve", {"--lora", "x.gguf"}, true}, {"serve", {"--spec-type", "ngram-simple"}, true}, {"serve", {"-nocb"}, false}, {"serve", {"--metrics"}, false},
    {"serve", {"--embedding"}, false}, {"serve", {"--ssl-key-file", "k"}, false}, {"serve", {"-sps", "0.5"}, false},
    // llama-bench -> bench
    {"bench", {"-ngl", "99"}, true}, {"bench", {"-ctk", "q8_0"}, true}, {"bench", {"-ctv", "q8_0"}, true},
    {"bench", {"-fa", "1"}, true}, {"bench", {"-mmp", "0"}, true}, {"bench", {"-p", "64"}, true},
    {"bench", {"-n", "16"}, true}, {"bench", {"-r", "2"}, true}, {"bench", {"-o", "json"}, true},
    {"bench", {"-ub", "256"}, false}, {"bench", {"-sm", "row"}, false}, {"bench", {"-nkvo", "1"}, false},
    {"bench", {"-embd", "1"}, false}, {"bench", {"-ts", "1/1"}, false}, {"bench", {"-pg", "512,128"}, false},
    // llama-perplexity, llama-embedding, llama-batched-bench
    {"perplexity", {"-ngl", "99"}, true}, {"perplexity", {"-ctk", "q8_0"}, true}, {"perplexity", {"--chunks", "2"}, true},
    {"perplexity", {"--hellaswag"}, false}, {"perplexity", {"--ppl-stride", "4"}, false},
    {"embed", {"-ngl", "99"}, true}, {"embed", {"--pooling", "mean"}, true}, {"embed", {"--attention", "causal"}, false},
    {"batched-bench", {"-npp", "8"}, true}, {"batched-bench", {"-ntg", "8"}, true}, {"batched-bench", {"-npl", "1,2"}, true},
    {"batched-bench", {"-ngl", "99"}, true}, {"batched-bench", {"-pps"}, false},
};
// clang-format on

std::string label(const FlagCase& c) {
  std::string s = c.command;
  for (const std::string& a : c.args) s += " " + a;
  return s;
}

TEST(LlamaFlags, EachIsImplementedOrRefusedByName) {
  ::setenv("FERRITE_OFFLINE", "1", 1);  // -hf must not reach the network
  for (const FlagCase& c : kCases) {
    SCOPED_TRACE(label(c));
    std::vector<std::string> args = {c.command};
    const std::string cmd = c.command;
    const bool hf = c.args[0] == "-hf" || c.args[0] == "-hfr";
    if (!hf) args.push_back(kNoModel);
    if (cmd == "run" || cmd == "chat" || cmd == "embed") args.insert(args.end(), {"-p", "x"});
    if (cmd == "perplexity") args.insert(args.end(), {"-f", "/dev/null"});
    args.insert(args.end(), c.args.begin(), c.args.end());
    const CommandResult r = run_ferrite(args);
    if (c.implemented) {
      EXPECT_EQ(r.status, 1) << r.err;  // parsed; the model is missing
      EXPECT_EQ(r.err.find("not supported"), std::string::npos) << r.err;
      EXPECT_NE(r.err.find(hf ? "owner/repo" : "ferrite-flags-test"), std::string::npos) << r.err;
    } else {
      EXPECT_EQ(r.status, 2) << r.err;
      EXPECT_NE(r.err.find("not supported: " + c.args[0]), std::string::npos) << r.err;
    }
  }
  ::unsetenv("FERRITE_OFFLINE");
}

TEST(LlamaFlags, ValuesThatLookLikeFlagsStayValues) {
  // The value of -p is text, whatever it looks like.
  FERRITE_SHARED_FILE(model, "models/stories260K.gguf");
  const CommandResult r = run_ferrite({"run", model.string(), "-p", "-fa", "-n", "0", "--echo", "-t", "2"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "-fa");
}

TEST(LlamaFlags, ModelAsFirstArgumentOrDashM) {
  FERRITE_SHARED_FILE(model, "models/stories260K.gguf");
  for (const char* command : {"run", "chat", "tokenize", "show", "info"}) {
    SCOPED_TRACE(command);
    std::vector<std::string> pos = {command, model.string()}, dash = {command, "-m", model.string()};
    for (auto* a : {&pos, &dash}) {
      if (std::string(command) == "run") a->insert(a->end(), {"-p", "Once", "-n", "1", "-t", "2"});
      if (std::string(command) == "tokenize") a->insert(a->end(), {"-p", "Once"});
    }
    const CommandResult a = run_ferrite(pos), b = run_ferrite(dash);
    EXPECT_EQ(a.status, 0) << a.err;
    EXPECT_EQ(b.status, 0) << b.err;
  }
}

#ifndef FERRITE_HAVE_CUDA
TEST(LlamaFlags, GpuLayersOnACpuBuildWarnAndRun) {
  FERRITE_SHARED_FILE(model, "models/stories260K.gguf");
  const CommandResult r =
      run_ferrite({"run", model.string(), "-p", "Once", "-n", "3", "-ngl", "99", "--temp", "0", "-t", "2"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("no GPU backend"), std::string::npos) << r.err;
  EXPECT_FALSE(r.out.empty());
}
#endif

TEST(LlamaFlags, SystemPromptMakesRunChat) {
  FERRITE_SHARED_FILE(model, "models/stories260K.gguf");
  // As llama-cli: -sys holds a conversation (here fed from stdin, then EOF).
  const CommandResult r = run_ferrite(
      {"run", model.string(), "-sys", "Be brief.", "-n", "4", "--temp", "0", "--chat-template", "chatml", "-t", "2"},
      "Hello\n");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("tokens/s"), std::string::npos) << r.err;  // one turn answered
}

TEST(CliUsage, BareFerriteAndHelpListTheCommands) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{}, {"help"}, {"--help"}}) {
    const CommandResult r = run_ferrite(args);
    EXPECT_EQ(r.status, 0);
    for (const char* cmd : {"run", "chat", "serve", "list", "show", "rm", "ps", "pull", "bench"}) {
      EXPECT_NE(r.out.find(std::string("  ") + cmd + " "), std::string::npos) << cmd << "\n" << r.out;
    }
  }
  const CommandResult h = run_ferrite({"help", "run"});
  EXPECT_EQ(h.status, 0);
  EXPECT_NE(h.out.find("--n-predict"), std::string::npos) << h.out;
}

TEST(CliUsage, UnknownCommandGetsDidYouMeanAndStatus2) {
  const CommandResult r = run_ferrite({"rn", "x"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("did you mean"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'run'"), std::string::npos) << r.err;
  const CommandResult s = run_ferrite({"serv"});
  EXPECT_NE(s.err.find("did you mean 'serve'"), std::string::npos) << s.err;
}

TEST(CliUsage, BadOptionsAreStatus2AndErrorsStatus1) {
  EXPECT_EQ(run_ferrite({"run", kNoModel, "--no-such-option"}).status, 2);
  EXPECT_EQ(run_ferrite({"run", kNoModel, "-n", "lots"}).status, 2);
  EXPECT_EQ(run_ferrite({"run", "-p", "x"}).status, 2);  // no model at all
  EXPECT_EQ(run_ferrite({"run", kNoModel, "-p", "x"}).status, 1);
}

TEST(CliUsage, VersionNamesCommitBackendsAndIsa) {
  const CommandResult r = run_ferrite({"--version"});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("ferrite 0."), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("commit: "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("commit: unknown"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("backends: cpu"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("this CPU: "), std::string::npos) << r.out;
}

}  // namespace
}  // namespace ferrite::test
