// The category range lists against their definition: for every code point,
// membership in a list equals "utf8proc_category is one of the category's
// members" (the Unicode general category grouping, written out here by hand);
// White_Space against the UCD PropList entries, also written out by hand.
#include <utf8proc.h>

#include <array>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tokenizer/unicode_ranges.h"

namespace ferrite::tokenizer {
namespace {

struct Definition {
  const char* name;
  std::vector<int> categories;
};

const std::vector<Definition>& definitions() {
  static const std::vector<Definition> d = {
      {"L", {UTF8PROC_CATEGORY_LU, UTF8PROC_CATEGORY_LL, UTF8PROC_CATEGORY_LT, UTF8PROC_CATEGORY_LM,
             UTF8PROC_CATEGORY_LO}},
      {"Lu", {UTF8PROC_CATEGORY_LU}},
      {"Ll", {UTF8PROC_CATEGORY_LL}},
      {"Lt", {UTF8PROC_CATEGORY_LT}},
      {"Lm", {UTF8PROC_CATEGORY_LM}},
      {"Lo", {UTF8PROC_CATEGORY_LO}},
      {"LC", {UTF8PROC_CATEGORY_LU, UTF8PROC_CATEGORY_LL, UTF8PROC_CATEGORY_LT}},
      {"L&", {UTF8PROC_CATEGORY_LU, UTF8PROC_CATEGORY_LL, UTF8PROC_CATEGORY_LT}},
      {"M", {UTF8PROC_CATEGORY_MN, UTF8PROC_CATEGORY_MC, UTF8PROC_CATEGORY_ME}},
      {"Mn", {UTF8PROC_CATEGORY_MN}},
      {"Mc", {UTF8PROC_CATEGORY_MC}},
      {"Me", {UTF8PROC_CATEGORY_ME}},
      {"N", {UTF8PROC_CATEGORY_ND, UTF8PROC_CATEGORY_NL, UTF8PROC_CATEGORY_NO}},
      {"Nd", {UTF8PROC_CATEGORY_ND}},
      {"Nl", {UTF8PROC_CATEGORY_NL}},
      {"No", {UTF8PROC_CATEGORY_NO}},
      {"P", {UTF8PROC_CATEGORY_PC, UTF8PROC_CATEGORY_PD, UTF8PROC_CATEGORY_PS, UTF8PROC_CATEGORY_PE,
             UTF8PROC_CATEGORY_PI, UTF8PROC_CATEGORY_PF, UTF8PROC_CATEGORY_PO}},
      {"Pc", {UTF8PROC_CATEGORY_PC}},
      {"Pd", {UTF8PROC_CATEGORY_PD}},
      {"Ps", {UTF8PROC_CATEGORY_PS}},
      {"Pe", {UTF8PROC_CATEGORY_PE}},
      {"Pi", {UTF8PROC_CATEGORY_PI}},
      {"Pf", {UTF8PROC_CATEGORY_PF}},
      {"Po", {UTF8PROC_CATEGORY_PO}},
      {"S", {UTF8PROC_CATEGORY_SM, UTF8PROC_CATEGORY_SC, UTF8PROC_CATEGORY_SK, UTF8PROC_CATEGORY_SO}},
      {"Sm", {UTF8PROC_CATEGORY_SM}},
      {"Sc", {UTF8PROC_CATEGORY_SC}},
      {"Sk", {UTF8PROC_CATEGORY_SK}},
      {"So", {UTF8PROC_CATEGORY_SO}},
      {"Z", {UTF8PROC_CATEGORY_ZS, UTF8PROC_CATEGORY_ZL, UTF8PROC_CATEGORY_ZP}},
      {"Zs", {UTF8PROC_CATEGORY_ZS}},
      {"Zl", {UTF8PROC_CATEGORY_ZL}},
      {"Zp", {UTF8PROC_CATEGORY_ZP}},
      {"C", {UTF8PROC_CATEGORY_CC, UTF8PROC_CATEGORY_CF, UTF8PROC_CATEGORY_CS, UTF8PROC_CATEGORY_CO,
             UTF8PROC_CATEGORY_CN}},
      {"Cc", {UTF8PROC_CATEGORY_CC}},
      {"Cf", {UTF8PROC_CATEGORY_CF}},
      {"Cs", {UTF8PROC_CATEGORY_CS}},
      {"Co", {UTF8PROC_CATEGORY_CO}},
      {"Cn", {UTF8PROC_CATEGORY_CN}},
  };
  return d;
}

bool is_surrogate(uint32_t c) { return c >= kSurrogateFirst && c <= kSurrogateLast; }

// Membership of every code point in `ranges`, checking on the way that the
// list is sorted, disjoint and not adjacent.
std::vector<uint8_t> members(const RangeList& ranges) {
  std::vector<uint8_t> in(kMaxCodepoint + 1, 0);
  for (size_t i = 0; i < ranges.size(); ++i) {
    EXPECT_LE(ranges[i].first, ranges[i].last);
    EXPECT_LE(ranges[i].last, kMaxCodepoint);
    if (i > 0) {
      EXPECT_GT(ranges[i].first, ranges[i - 1].last + 1) << "range " << i;
    }
    for (uint32_t c = ranges[i].first; c <= ranges[i].last; ++c) in[c] = 1;
  }
  return in;
}

TEST(UnicodeRanges, EveryCategoryMatchesUtf8procForEveryCodepoint) {
  std::vector<uint8_t> cat(kMaxCodepoint + 1);
  for (uint32_t c = 0; c <= kMaxCodepoint; ++c) {
    cat[c] = static_cast<uint8_t>(utf8proc_category(static_cast<utf8proc_int32_t>(c)));
  }
  for (const auto& def : definitions()) {
    const RangeList* ranges = category_ranges(def.name);
    ASSERT_NE(ranges, nullptr) << def.name;
    std::array<uint8_t, UTF8PROC_CATEGORY_CO + 1> wanted{};
    for (int k : def.categories) wanted[k] = 1;
    const auto in = members(*ranges);
    size_t mismatches = 0;
    for (uint32_t c = 0; c <= kMaxCodepoint; ++c) {
      // Surrogates are never in a list: they cannot occur in UTF-8 text.
      const uint8_t expected = is_surrogate(c) ? 0 : wanted[cat[c]];
      if (in[c] != expected && ++mismatches <= 5) ADD_FAILURE() << def.name << " U+" << std::hex << c;
    }
    EXPECT_EQ(mismatches, 0u) << def.name;
  }
}

TEST(UnicodeRanges, NamesMatchLooselyAndUnknownNamesAreNotCategories) {
  EXPECT_EQ(category_ranges("l"), category_ranges("L"));
  EXPECT_EQ(category_ranges("l u"), category_ranges("Lu"));
  EXPECT_EQ(category_ranges("L_o"), category_ranges("Lo"));
  EXPECT_EQ(category_ranges("Han"), nullptr);
  EXPECT_EQ(category_ranges("Greek"), nullptr);
  EXPECT_EQ(category_ranges(""), nullptr);
  const RangeList* any = category_ranges("Any");
  ASSERT_NE(any, nullptr);
  EXPECT_EQ(*any, (RangeList{{0, kSurrogateFirst - 1}, {kSurrogateLast + 1, kMaxCodepoint}}));
}

TEST(UnicodeRanges, WhiteSpaceIsThePropListSet) {
  // PropList.txt, White_Space.
  const RangeList expected = {{0x09, 0x0D}, {0x20, 0x20},     {0x85, 0x85},     {0xA0, 0xA0},
                              {0x1680, 0x1680}, {0x2000, 0x200A}, {0x2028, 0x2029}, {0x202F, 0x202F},
                              {0x205F, 0x205F}, {0x3000, 0x3000}};
  EXPECT_EQ(whitespace_ranges(), expected);
}

TEST(UnicodeRanges, UnionComplementContain) {
  const RangeList a = {{0x10, 0x20}, {0x40, 0x40}};
  const RangeList b = {{0x21, 0x30}, {0x3F, 0x50}, {0xD000, 0xE000}};
  EXPECT_EQ(union_ranges(a, b), (RangeList{{0x10, 0x30}, {0x3F, 0x50}, {0xD000, 0xE000}}));
  EXPECT_EQ(complement_ranges(a), (RangeList{{0x0, 0xF}, {0x21, 0x3F}, {0x41, kSurrogateFirst - 1},
                                             {kSurrogateLast + 1, kMaxCodepoint}}));
  EXPECT_EQ(complement_ranges(complement_ranges(a)), a);
  EXPECT_TRUE(ranges_contain(a, 0x10));
  EXPECT_TRUE(ranges_contain(a, 0x20));
  EXPECT_TRUE(ranges_contain(a, 0x40));
  EXPECT_FALSE(ranges_contain(a, 0x0F));
  EXPECT_FALSE(ranges_contain(a, 0x21));
  EXPECT_FALSE(ranges_contain(a, 0x41));
  EXPECT_FALSE(ranges_contain({}, 0));
}

TEST(UnicodeRanges, Unicode15Additions) {
  // Code points first assigned in Unicode 15.0 (UnicodeData.txt).
  const RangeList* lm = category_ranges("Lm");
  const RangeList* lo = category_ranges("Lo");
  const RangeList* nd = category_ranges("Nd");
  ASSERT_TRUE(lm && lo && nd);
  EXPECT_TRUE(ranges_contain(*lm, 0x1E030));  // CYRILLIC MODIFIER LETTER SMALL A
  EXPECT_TRUE(ranges_contain(*lm, 0x1E06D));  // CYRILLIC MODIFIER LETTER SMALL STRAIGHT U WITH STROKE
  EXPECT_TRUE(ranges_contain(*lo, 0x11F04));  // KAWI LETTER A
  EXPECT_TRUE(ranges_contain(*lo, 0x31350));  // CJK Extension H, first
  EXPECT_TRUE(ranges_contain(*lo, 0x1E4D0));  // NAG MUNDARI LETTER O
  EXPECT_TRUE(ranges_contain(*nd, 0x1E4F0));  // NAG MUNDARI DIGIT ZERO
}

}  // namespace
}  // namespace ferrite::tokenizer
