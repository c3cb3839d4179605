#include "hub/progress.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

namespace ferrite::hub {
namespace {

std::string contents(std::FILE* f) {
  std::rewind(f);
  std::string s;
  int c;
  while ((c = std::fgetc(f)) != EOF) s.push_back(static_cast<char>(c));
  return s;
}

size_t count(const std::string& s, char c) { return static_cast<size_t>(std::count(s.begin(), s.end(), c)); }

TEST(Progress, FormatsBytes) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(1024), "1.00 KiB");
  EXPECT_EQ(format_bytes(1185376), "1.13 MiB");        // 1185376 / 2^20 = 1.1304
  EXPECT_EQ(format_bytes(3ull << 30), "3.00 GiB");
}

TEST(Progress, LineModePrintsOncePerTenth) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    ProgressReporter p("model.gguf", ProgressMode::kLines, f);
    const uint64_t total = 100000;
    for (uint64_t done = 0; done < total; done += 1000) p.update(done, total);
    p.finish(total, total);
  }
  const std::string out = contents(f);
  std::fclose(f);
  EXPECT_EQ(count(out, '\n'), 11u) << out;  // 0%, 10%, ..., 90%, then 100%
  EXPECT_NE(out.find("model.gguf: 100% (97.66 KiB of 97.66 KiB)"), std::string::npos) << out;
}

TEST(Progress, BarModeRedrawsOneLine) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    ProgressReporter p("m", ProgressMode::kBar, f);
    p.update(50, 100);
    p.finish(100, 100);
  }
  const std::string out = contents(f);
  std::fclose(f);
  EXPECT_EQ(count(out, '\n'), 1u) << out;
  EXPECT_GE(count(out, '\r'), 2u) << out;
  EXPECT_NE(out.find("100%"), std::string::npos) << out;
}

TEST(Progress, SilentPrintsNothing) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    ProgressReporter p("m", ProgressMode::kSilent, f);
    p.update(50, 100);
    p.finish(100, 100);
  }
  EXPECT_EQ(contents(f), "");
  std::fclose(f);
}

}  // namespace
}  // namespace ferrite::hub
