// `ferrite chat` end to end: through a pseudo-terminal (the line editor, the
// KV reuse between turns, /reset, /save and /load, Ctrl-C), and with piped
// stdin (scripted chats, multi-line input). Prompt token counts are checked
// against ChatML written out by hand and tokenized by the library.
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include "cli_util.h"
#include "support/test_data.h"
#include "tokenizer/tokenizer.h"

namespace ferrite {
namespace {

// How long the test waits for output that must come (a guard against hangs,
// not a synchronization: reads return as soon as the text is there).
constexpr int kOutputTimeoutMs = 120000;
// The editor's redraw of an empty prompt line.
const std::string kPrompt = "\r> \x1b[0K";

// ChatML (the format's definition), as in the ChatSession tests.
struct Msg {
  std::string role, content;
};
std::string chatml(const std::vector<Msg>& msgs, bool generation_prompt) {
  std::string s;
  for (const Msg& m : msgs) s += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
  if (generation_prompt) s += "<|im_start|>assistant\n";
  return s;
}

int64_t common_prefix_but_last(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  if (b.empty()) return 0;
  size_t n = 0;
  while (n < a.size() && n + 1 < b.size() && a[n] == b[n]) ++n;
  return static_cast<int64_t>(n);
}

struct Prefill {
  int64_t evaluated = -1, reused = -1, prompt = -1;
};

// Every "[prefill: E tokens evaluated, R reused, P in the prompt]" in `text`.
std::vector<Prefill> prefills(const std::string& text) {
  static const std::regex re(R"(\[prefill: (\d+) tokens evaluated, (\d+) reused, (\d+) in the prompt\])");
  std::vector<Prefill> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it) {
    out.push_back({std::stoll((*it)[1]), std::stoll((*it)[2]), std::stoll((*it)[3])});
  }
  return out;
}

// `ferrite ARGS` on the slave side of a pseudo-terminal.
class PtyChild {
 public:
  explicit PtyChild(const std::vector<std::string>& args) {
    std::vector<std::string> argv_s = {FERRITE_BINARY};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    winsize ws{};
    ws.ws_row = 50;
    ws.ws_col = 250;
    pid_ = ::forkpty(&master_, nullptr, nullptr, &ws);
    if (pid_ == 0) {
      ::execv(FERRITE_BINARY, argv.data());
      ::_exit(127);
    }
  }
  ~PtyChild() {
    if (pid_ > 0 && !exited_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (master_ >= 0) ::close(master_);
  }
  bool started() const { return pid_ > 0 && master_ >= 0; }

  void send(const std::string& bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(master_, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      done += static_cast<size_t>(n);
    }
  }

  // Reads until `needle` appears past what earlier calls consumed; `chunk`
  // gets everything up to and including it. False on end of output or
  // timeout (the output so far is in all()).
  bool read_until(const std::string& needle, std::string* chunk = nullptr) {
    for (;;) {
      const size_t at = out_.find(needle, consumed_);
      if (at != std::string::npos) {
        const size_t end = at + needle.size();
        if (chunk != nullptr) *chunk = out_.substr(consumed_, end - consumed_);
        consumed_ = end;
        return true;
      }
      if (!read_more()) return false;
    }
  }
  // Waits for at least one byte past what was consumed.
  bool read_some() {
    while (out_.size() <= consumed_) {
      if (!read_more()) return false;
    }
    consumed_ = out_.size();
    return true;
  }
  // Reads to the end of output and returns the exit status (-1: killed).
  int wait_exit() {
    while (read_more()) {
    }
    int status = 0;
    if (::waitpid(pid_, &status, 0) != pid_) return -1;
    exited_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  const std::string& all() const { return out_; }

 private:
  bool read_more() {
    pollfd p{master_, POLLIN, 0};
    const int r = ::poll(&p, 1, kOutputTimeoutMs);
    if (r <= 0) return false;
    char buf[4096];
    const ssize_t n = ::read(master_, buf, sizeof buf);
    if (n <= 0) return false;  // EIO once the child has gone
    out_.append(buf, static_cast<size_t>(n));
    return true;
  }

  pid_t pid_ = -1;
  int master_ = -1;
  bool exited_ = false;
  std::string out_;
  size_t consumed_ = 0;
};

class ChatCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = test::shared_path("models/stories260K.gguf");
    if (!std::filesystem::exists(model_)) {
      if (test::in_ci()) FAIL() << "shared test data missing: " << model_;
      GTEST_SKIP() << "shared test data missing: " << model_;
    }
    tok_ = std::make_unique<tokenizer::Tokenizer>(tokenizer::Tokenizer::from_file(model_.string()));
  }
  std::vector<int32_t> tokens_of(const std::string& text) const { return tok_->encode(text, true, true); }
  int64_t count(const std::string& text) const { return static_cast<int64_t>(tokens_of(text).size()); }
  std::vector<std::string> args(std::vector<std::string> extra) const {
    std::vector<std::string> a = {"chat", "-m", model_.string(), "--chat-template", "chatml", "--temp", "0", "-t", "2"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  std::string temp_file(const std::string& name) const {
    return (std::filesystem::temp_directory_path() / ("ferrite-chat-" + std::to_string(::getpid()) + "-" + name))
        .string();
  }

  std::filesystem::path model_;
  std::unique_ptr<tokenizer::Tokenizer> tok_;
};

TEST_F(ChatCommand, PtyTurnsReuseTheCacheAndCommandsWork) {
  const std::string saved = temp_file("save.json");
  PtyChild chat(args({"-n", "16", "-c", "512", "--verbose"}));
  ASSERT_TRUE(chat.started());
  ASSERT_TRUE(chat.read_until(kPrompt)) << chat.all();

  // Turn 1: everything is evaluated.
  std::string chunk;
  chat.send("Hello\r");
  ASSERT_TRUE(chat.read_until(kPrompt, &chunk)) << chat.all();
  std::vector<Prefill> p = prefills(chunk);
  ASSERT_EQ(p.size(), 1u) << chunk;
  const std::string turn1 = chatml({{"user", "Hello"}}, true);
  EXPECT_EQ(p[0].prompt, count(turn1));
  EXPECT_EQ(p[0].evaluated, p[0].prompt);
  EXPECT_EQ(p[0].reused, 0);

  // Turn 2: only what turn 1 did not leave in the cache.
  chat.send("Tell me more\r");
  ASSERT_TRUE(chat.read_until(kPrompt, &chunk)) << chat.all();
  p = prefills(chunk);
  ASSERT_EQ(p.size(), 1u) << chunk;
  chat.send("/save " + saved + "\r");
  ASSERT_TRUE(chat.read_until("[saved 4 messages to ")) << chat.all();
  ASSERT_TRUE(chat.read_until(kPrompt)) << chat.all();
  const nlohmann::json doc = nlohmann::json::parse(test::read_file(saved));
  std::vector<Msg> msgs;
  for (const auto& m : doc["messages"]) msgs.push_back({m["role"], m["content"]});
  ASSERT_EQ(msgs.size(), 4u);
  EXPECT_EQ(msgs[2].content, "Tell me more");
  const std::vector<int32_t> t2 = tokens_of(chatml({msgs[0], msgs[1], msgs[2]}, true));
  EXPECT_EQ(p[0].prompt, static_cast<int64_t>(t2.size()));
  EXPECT_GE(p[0].reused, common_prefix_but_last(tokens_of(turn1), t2));
  EXPECT_GE(p[0].reused, count(turn1) - 1);
  EXPECT_EQ(p[0].evaluated + p[0].reused, p[0].prompt);

  // /reset: the next turn starts from an empty cache.
  chat.send("/reset\r");
  ASSERT_TRUE(chat.read_until("[conversation reset]")) << chat.all();
  ASSERT_TRUE(chat.read_until(kPrompt)) << chat.all();
  chat.send("Hello\r");
  ASSERT_TRUE(chat.read_until(kPrompt, &chunk)) << chat.all();
  p = prefills(chunk);
  ASSERT_EQ(p.size(), 1u) << chunk;
  EXPECT_EQ(p[0].reused, 0);
  EXPECT_EQ(p[0].prompt, count(turn1));

  // /load: the saved conversation is evaluated; the next turn extends it.
  chat.send("/load " + saved + "\r");
  ASSERT_TRUE(chat.read_until("[loaded 4 messages from ", &chunk)) << chat.all();
  ASSERT_TRUE(chat.read_until("KV state restored]")) << chat.all();
  ASSERT_TRUE(chat.read_until(kPrompt)) << chat.all();
  p = prefills(chunk);
  ASSERT_EQ(p.size(), 1u) << chunk;
  const std::vector<int32_t> loaded = tokens_of(chatml(msgs, false));
  EXPECT_EQ(p[0].prompt, static_cast<int64_t>(loaded.size()));
  EXPECT_LT(p[0].evaluated, p[0].prompt);  // the restored cache holds the rest
  chat.send("And then?\r");
  ASSERT_TRUE(chat.read_until(kPrompt, &chunk)) << chat.all();
  p = prefills(chunk);
  ASSERT_EQ(p.size(), 1u) << chunk;
  std::vector<Msg> next = msgs;
  next.push_back({"user", "And then?"});
  const std::vector<int32_t> t3 = tokens_of(chatml(next, true));
  EXPECT_EQ(p[0].prompt, static_cast<int64_t>(t3.size()));
  EXPECT_EQ(p[0].reused, common_prefix_but_last(loaded, t3));

  chat.send("\x04");  // Ctrl-D on an empty line
  EXPECT_EQ(chat.wait_exit(), 0) << chat.all();
  std::filesystem::remove(saved);
  std::filesystem::remove(saved + ".kv");
}

TEST_F(ChatCommand, PtyLineEditingReachesTheModel) {
  PtyChild chat(args({"-n", "4", "-c", "256", "--verbose"}));
  ASSERT_TRUE(chat.started());
  ASSERT_TRUE(chat.read_until(kPrompt)) << chat.all();
  // "Helo", Left, "l", End, "!!", Backspace, then a line from history.
  std::string chunk;
  chat.send("Helo\x1b[Dl\x1b[F!!\x7f\r");
  ASSERT_TRUE(chat.read_until(kPrompt, &chunk)) << chat.all();
  std::vector<Prefill> p = prefills(chunk);
  ASSERT_EQ(p.size(), 1u) << chunk;
  EXPECT_EQ(p[0].prompt, count(chatml({{"user", "Hello!"}}, true)));
  // A continued line: "a\" then "b" make the message "a\nb"; /reset first so
  // the prompt holds that message alone.
  chat.send("/reset\r");
  ASSERT_TRUE(chat.read_until(kPrompt)) << chat.all();
  chat.send("a\\\rb\r");
  ASSERT_TRUE(chat.read_until(kPrompt, &chunk)) << chat.all();
  p = prefills(chunk);
  ASSERT_EQ(p.size(), 1u) << chunk;
  EXPECT_EQ(p[0].prompt, count(chatml({{"user", "a\nb"}}, true)));
  chat.send("/quit\r");
  EXPECT_EQ(chat.wait_exit(), 0) << chat.all();
}

TEST_F(ChatCommand, PtyCtrlCInterruptsTheAnswerThenQuitsAtThePrompt) {
  // An answer that only the context size ends (thousands of tokens).
  PtyChild chat(args({"-n", "-1", "--ignore-eos", "-c", "4096"}));
  ASSERT_TRUE(chat.started());
  ASSERT_TRUE(chat.read_until(kPrompt)) << chat.all();
  chat.send("Hello\r");
  ASSERT_TRUE(chat.read_until("\r\n")) << chat.all();  // the line is submitted
  ASSERT_TRUE(chat.read_some()) << chat.all();         // the answer is streaming
  chat.send("\x03");
  ASSERT_TRUE(chat.read_until("[interrupted]")) << chat.all();
  ASSERT_TRUE(chat.read_until(kPrompt)) << chat.all();
  // The program is still there: a second Ctrl-C, at the prompt, leaves.
  chat.send("\x03");
  EXPECT_EQ(chat.wait_exit(), 0) << chat.all();
}

TEST_F(ChatCommand, PtyCtrlCAtThePromptWarnsFirst) {
  PtyChild chat(args({"-n", "4", "-c", "256"}));
  ASSERT_TRUE(chat.started());
  ASSERT_TRUE(chat.read_until(kPrompt)) << chat.all();
  chat.send("abc\x03");
  ASSERT_TRUE(chat.read_until("Ctrl-C again")) << chat.all();
  ASSERT_TRUE(chat.read_until(kPrompt)) << chat.all();
  chat.send("\x03");
  EXPECT_EQ(chat.wait_exit(), 0) << chat.all();
}

TEST_F(ChatCommand, PipedInputIsReadLineByLine) {
  const std::string input =
      "\"\"\"\nline one\nline two\n\"\"\"\n"  // a block
      "/reset\n"
      "a\\\nb\n";  // a continued line
  const auto r = test::run_ferrite(args({"-sys", "Be kind.", "-n", "8", "-c", "256", "--verbose"}), input);
  ASSERT_EQ(r.status, 0) << r.err;
  const std::vector<Prefill> p = prefills(r.err);
  ASSERT_EQ(p.size(), 2u) << r.err;
  EXPECT_EQ(p[0].prompt, count(chatml({{"system", "Be kind."}, {"user", "line one\nline two"}}, true)));
  EXPECT_EQ(p[1].prompt, count(chatml({{"system", "Be kind."}, {"user", "a\nb"}}, true)));
  EXPECT_EQ(p[1].reused, 0);
  EXPECT_FALSE(r.out.empty());
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos);  // no terminal sequences in piped output
  EXPECT_NE(r.err.find("[conversation reset]"), std::string::npos);
}

TEST_F(ChatCommand, BadInputGivesClearErrors) {
  auto r = test::run_ferrite({"chat", "-m", "/nonexistent/model.gguf"}, "");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("error"), std::string::npos);
  r = test::run_ferrite({"chat", "-m", model_.string(), "--chat-template", "no-such-template"}, "");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("error"), std::string::npos);
  // Within a chat, bad commands and files are reported and the chat goes on.
  // (Without context shift, a message longer than the context is refused.)
  r = test::run_ferrite(args({"-n", "2", "-c", "64", "--no-context-shift"}),
                        "/nope\n/load /nonexistent/chat.json\n/save\n" + std::string(300, 'x') + "\nHi\n");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("unknown command /nope"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("/nonexistent/chat.json"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("usage: /save FILE"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("does not fit in the context"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("tokens/s"), std::string::npos) << r.err;  // "Hi" was answered
}

}  // namespace
}  // namespace ferrite
