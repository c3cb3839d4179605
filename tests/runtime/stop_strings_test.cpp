// Stop strings: text is cut at the first one, and a tail that may begin one
// is held back until the next piece settles it.
#include <gtest/gtest.h>

#include "runtime/stop_strings.h"

namespace ferrite::runtime {
namespace {

TEST(StopStrings, CutsAtStopSplitAcrossPieces) {
  StopStrings s({"<end>"});
  std::string out = s.push("Hello <e");
  EXPECT_EQ(out, "Hello ");  // "<e" may start the stop string
  out += s.push("n");
  EXPECT_FALSE(s.stopped());
  out += s.push("d> tail");
  EXPECT_TRUE(s.stopped());
  EXPECT_EQ(s.matched(), "<end>");
  EXPECT_EQ(out, "Hello ");
  EXPECT_EQ(s.flush(), "");
}

TEST(StopStrings, ReleasesHeldTextThatIsNotAStop) {
  StopStrings s({"abc"});
  EXPECT_EQ(s.push("xab"), "x");
  EXPECT_EQ(s.push("x"), "abx");
  EXPECT_EQ(s.push("ab"), "");
  EXPECT_EQ(s.flush(), "ab");
  EXPECT_FALSE(s.stopped());
}

TEST(StopStrings, EarliestOfSeveralWins) {
  StopStrings s({"world", "lo"});
  EXPECT_EQ(s.push("hello world"), "hel");
  EXPECT_EQ(s.matched(), "lo");
}

}  // namespace
}  // namespace ferrite::runtime
