// Python's jinja2 as the reference for chat-template tests: cases are sent
// in one batch to tests/chat/jinja_oracle.py (the environment Hugging Face's
// apply_chat_template uses) and rendered by ferrite too; outputs must match
// byte for byte, and a template Python refuses must be refused by ferrite.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "chat/template.h"
#include "support/test_data.h"

namespace ferrite::chat::test {

// strftime_now's fixed instant in both renderers: 2024-07-26 12:00:00 UTC.
constexpr int64_t kFixedNow = 1721995200;

struct OracleCase {
  std::string name;
  std::string source;
  Json context;
};

struct OracleResult {
  bool ok = false;
  std::string text;  // output, or the error message
};

inline std::filesystem::path oracle_script() {
  // Not __FILE__: with ccache's base directory it is relative to the build.
  return std::filesystem::path(FERRITE_SOURCE_DIR) / "tests" / "chat" / "jinja_oracle.py";
}

// Renders every case with Python's jinja2. Returns false (and the reason)
// when Python or jinja2 is unavailable.
inline bool run_oracle(const std::vector<OracleCase>& cases, std::vector<OracleResult>& results, std::string& why) {
  Json batch = Json::array();
  for (const auto& c : cases) batch.push_back(Json{{"template", c.source}, {"context", c.context}});
  char path[] = "/tmp/ferrite_oracle_XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) {
    why = "cannot create a temporary file";
    return false;
  }
  close(fd);
  {
    std::ofstream out(path, std::ios::binary);
    out << batch.dump();
  }
  const std::string cmd = "python3 '" + oracle_script().string() + "' '" + path + "' 2>/dev/null";
  FILE* pipe = popen(cmd.c_str(), "r");
  std::string text;
  if (pipe) {
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) text.append(buf, n);
    const int status = pclose(pipe);
    if (status != 0) text.clear();
  }
  std::remove(path);
  if (text.empty()) {
    why = "python3 with jinja2 (Debian python3-jinja2) is not available";
    return false;
  }
  const Json parsed = Json::parse(text);
  results.clear();
  for (const auto& r : parsed) {
    OracleResult res;
    res.ok = r["ok"].get<bool>();
    res.text = res.ok ? r["output"].get<std::string>() : r["error"].get<std::string>();
    results.push_back(std::move(res));
  }
  return results.size() == cases.size();
}

// Renders with ferrite: ok + output, or not ok + the TemplateError message.
inline OracleResult render_ferrite(const OracleCase& c) {
  OracleResult r;
  try {
    RenderOptions opt;
    opt.now_utc_seconds = kFixedNow;
    r.text = Template::parse(c.source).render(c.context, opt);
    r.ok = true;
  } catch (const TemplateError& e) {
    r.text = e.what();
  }
  return r;
}

// Compares ferrite to the oracle on every case. Returns the number of cases
// jinja2 rendered successfully (the rest are expected errors); 0 when the
// oracle is unavailable.
inline size_t expect_matches_oracle(const std::vector<OracleCase>& cases) {
  std::vector<OracleResult> expected;
  std::string why;
  if (!run_oracle(cases, expected, why)) {
    if (::ferrite::test::in_ci()) {
      ADD_FAILURE() << why;
    } else {
      std::fprintf(stderr, "skipping oracle comparison: %s\n", why.c_str());
    }
    return 0;
  }
  size_t rendered = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const OracleResult got = render_ferrite(cases[i]);
    if (expected[i].ok) {
      ++rendered;
      EXPECT_TRUE(got.ok) << cases[i].name << ": jinja2 rendered it but ferrite failed: " << got.text;
      if (got.ok) {
        EXPECT_EQ(got.text, expected[i].text) << cases[i].name;
      }
    } else {
      EXPECT_FALSE(got.ok) << cases[i].name << ": jinja2 failed (" << expected[i].text
                           << ") but ferrite rendered: " << got.text;
    }
  }
  std::fprintf(stderr, "%zu cases compared with jinja2, %zu rendered, %zu errors on both sides\n", cases.size(),
               rendered, cases.size() - rendered);
  return rendered;
}

}  // namespace ferrite::chat::test
