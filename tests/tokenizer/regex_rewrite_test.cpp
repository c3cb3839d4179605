// The property-escape rewrite: exact outputs on small sample patterns
// (expected texts written from the Unicode data by hand), the constructs it
// leaves alone or rejects, and, compiled with PCRE2, the rewritten escapes
// matching exactly the code points of their definition (utf8proc categories,
// White_Space) over the whole code space.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <utf8proc.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "tokenizer/pcre2_categories.h"
#include "tokenizer/regex_rewrite.h"
#include "tokenizer/unicode.h"
#include "tokenizer/unicode_ranges.h"

namespace ferrite::tokenizer {
namespace {

// The explicit-ranges form, whose output follows from the Unicode data alone.
std::string explicit_form(const std::string& p) { return rewrite_unicode_properties(p, PropertyForm::kExplicitRanges); }

const std::string kWhiteSpace =
    R"(\x{9}-\x{d}\x{20}\x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}-\x{2029}\x{202f}\x{205f}\x{3000})";

TEST(RegexRewrite, SmallClassesOutsideAClass) {
  EXPECT_EQ(explicit_form(R"(\p{Zl})"), R"([\x{2028}])");
  EXPECT_EQ(explicit_form(R"(\p{Zs}+)"),
            R"([\x{20}\x{a0}\x{1680}\x{2000}-\x{200a}\x{202f}\x{205f}\x{3000}]+)");
  EXPECT_EQ(explicit_form(R"(\s+(?!\S))"),
            "[" + kWhiteSpace + R"(]+(?![\x{0}-\x{8}\x{e}-\x{1f}\x{21}-\x{84}\x{86}-\x{9f}\x{a1}-\x{167f})"
                                R"(\x{1681}-\x{1fff}\x{200b}-\x{2027}\x{202a}-\x{202e}\x{2030}-\x{205e})"
                                R"(\x{2060}-\x{2fff}\x{3001}-\x{d7ff}\x{e000}-\x{10ffff}]))");
  EXPECT_EQ(explicit_form(R"(\P{Zl})"), R"([\x{0}-\x{2027}\x{2029}-\x{d7ff}\x{e000}-\x{10ffff}])");
  EXPECT_EQ(explicit_form(R"(\p{^Zl})"), explicit_form(R"(\P{Zl})"));
  EXPECT_EQ(explicit_form(R"(\pL)"), explicit_form(R"(\p{L})"));
  // Surrogates are never matched: \p{Cs} matches nothing, [^\p{Cs}] anything.
  EXPECT_EQ(explicit_form(R"(\p{Cs})"), "(?!)");
  EXPECT_EQ(explicit_form(R"([^\p{Cs}])"), R"([\x{0}-\x{d7ff}\x{e000}-\x{10ffff}])");
}

TEST(RegexRewrite, LetterClassStartsWithTheLatinLetters) {
  // A-Z a-z, U+AA (Lo), U+B5 (Ll), U+BA (Lo), U+C0-D6, U+D8-F6, U+F8-2C1,
  // then U+2C6-2D1 (Lm) after the Sk modifiers U+2C2-2C5.
  const std::string l = explicit_form(R"(\p{L})");
  EXPECT_EQ(l.rfind(R"([\x{41}-\x{5a}\x{61}-\x{7a}\x{aa}\x{b5}\x{ba}\x{c0}-\x{d6}\x{d8}-\x{f6}\x{f8}-\x{2c1})"
                    R"(\x{2c6}-\x{2d1})",
                    0),
            0u)
      << l.substr(0, 200);
  EXPECT_EQ(l.back(), ']');
}

TEST(RegexRewrite, InsideAClassTheRangesAreSplicedAndMerged) {
  EXPECT_EQ(explicit_form(R"([\r\n\p{Zl}])"), R"([\r\n\x{2028}])");
  EXPECT_EQ(explicit_form(R"([^\p{Zl}\p{Zp}x])"), R"([^\x{2028}-\x{2029}x])");
  EXPECT_EQ(explicit_form(R"([\s\p{Zs}])"), "[" + kWhiteSpace + "]");
  EXPECT_EQ(explicit_form(R"([-\p{Zl}])"), R"([-\x{2028}])");
  EXPECT_EQ(explicit_form(R"([\p{Zl}-])"), R"([\x{2028}-])");
  EXPECT_EQ(explicit_form(R"([]\p{Zl}])"), R"([]\x{2028}])");
}

TEST(RegexRewrite, LeavesOtherSyntaxAlone) {
  for (const char* p : {R"(\d+|\w|\b)", R"(\\p{L})", R"(\Q\p{L}[\E)", R"([\Q\s]\E])", R"([a-z][^A-Z0-9])",
                        R"(\p{Han}+|[\p{Greek}])", R"([[:alpha:]\]])", R"((?#[\p{L})x)", R"([一-龥ࠀ-一가-퟿]+)",
                        R"(\x{85}\cZ)"}) {
    EXPECT_EQ(rewrite_unicode_properties(p), p);
    EXPECT_EQ(explicit_form(p), p);
  }
}

TEST(RegexRewrite, CaseInsensitiveScopes) {
  // The (?i:..) group ends before the properties: nothing to protect.
  EXPECT_EQ(explicit_form(R"((?i:'s|'t)|\p{Zl})"), R"((?i:'s|'t)|[\x{2028}])");
  // Under (?i) a standalone class is shielded from case folding.
  EXPECT_EQ(explicit_form(R"((?i)a\p{Zl})"), R"((?i)a(?-i:[\x{2028}]))");
  EXPECT_EQ(explicit_form(R"((?i)a(?-i)\p{Zl})"), R"((?i)a(?-i)[\x{2028}])");
  EXPECT_EQ(explicit_form(R"(((?i)a)\p{Zl})"), R"(((?i)a)[\x{2028}])");
  EXPECT_EQ(explicit_form(R"((?i:(a)\p{Zl}))"), R"((?i:(a)(?-i:[\x{2028}])))");
  // Inside a class folding cannot be switched off.
  EXPECT_THROW(explicit_form(R"((?i)[\p{L}])"), ModelError);
  EXPECT_THROW(explicit_form(R"((?i:[^\s]))"), ModelError);
}

TEST(RegexRewrite, RejectsWhatItCannotKeepExact) {
  EXPECT_THROW(explicit_form(R"((?x)\p{L} # [)"), ModelError);
  EXPECT_THROW(explicit_form(R"([a-\p{L}])"), ModelError);
  EXPECT_THROW(explicit_form(R"([\p{L}-z])"), ModelError);
  // Unterminated classes are passed on for PCRE2 to report.
  EXPECT_EQ(explicit_form(R"([\p{L})"), R"([\p{L})");
}

// Every code point except the surrogates, in UTF-8, and where each starts.
struct CodeSpace {
  std::string text;
  std::vector<uint32_t> cpt_at;  // by byte offset; only lead bytes are meaningful
  CodeSpace() {
    cpt_at.reserve(4500000);
    for (uint32_t c = 0; c <= kMaxCodepoint; ++c) {
      if (c >= kSurrogateFirst && c <= kSurrogateLast) continue;
      append_utf8(text, c);
      cpt_at.resize(text.size(), c);
    }
  }
};

// Code points matched by `pattern` (rewritten, then compiled like the
// pre-tokenizer does) when run over the whole code space.
std::vector<uint8_t> matched(const CodeSpace& space, const std::string& pattern, PropertyForm form) {
  // Possessive: a long run must not need a backtracking frame per character.
  const std::string re = "(?:" + rewrite_unicode_properties(pattern, form) + ")++";
  int err = 0;
  PCRE2_SIZE off = 0;
  pcre2_code* code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(re.data()), re.size(), PCRE2_UTF, &err, &off, nullptr);
  std::vector<uint8_t> in(kMaxCodepoint + 1, 0);
  EXPECT_NE(code, nullptr) << pattern << " error " << err << " at " << off;
  if (!code) return in;
  EXPECT_EQ(pcre2_jit_compile(code, PCRE2_JIT_COMPLETE), 0) << pattern;
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(code, nullptr);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(space.text.data());
  PCRE2_SIZE pos = 0;
  while (pos < space.text.size()) {
    const int rc = pcre2_match(code, subject, space.text.size(), pos, PCRE2_NO_UTF_CHECK, md, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc <= 0) {
      ADD_FAILURE() << pattern << " match error " << rc << " at byte " << pos;
      break;
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    for (PCRE2_SIZE b = ov[0]; b < ov[1]; b += utf8_seq_len(static_cast<uint8_t>(space.text[b]))) {
      in[space.cpt_at[b]] = 1;
    }
    pos = ov[1] > ov[0] ? ov[1] : ov[0] + 1;
  }
  pcre2_match_data_free(md);
  pcre2_code_free(code);
  return in;
}

bool in_group(uint32_t c, char group) {
  // utf8proc names the category ("Lu", "Nd", ...); its first letter is the
  // group. Looked up once for every code point.
  static const std::vector<char> groups = [] {
    std::vector<char> g(kMaxCodepoint + 1);
    for (uint32_t k = 0; k <= kMaxCodepoint; ++k) {
      g[k] = utf8proc_category_string(static_cast<utf8proc_int32_t>(k))[0];
    }
    return g;
  }();
  return groups[c] == group;
}

// `all` adds the escapes that no form can leave to PCRE2 with Unicode 14
// tables (\P{L}, \p{C}: explicit ranges, slow to scan).
void check_everywhere(PropertyForm form, bool all) {
  const CodeSpace space;
  struct Case {
    const char* pattern;
    std::function<bool(uint32_t)> expected;
  };
  const std::vector<Case> cases = {
      {R"(\p{L})", [](uint32_t c) { return in_group(c, 'L'); }},
      {R"(\P{L})", [](uint32_t c) { return !in_group(c, 'L'); }},
      {R"(\p{N})", [](uint32_t c) { return in_group(c, 'N'); }},
      {R"(\p{P})", [](uint32_t c) { return in_group(c, 'P'); }},
      {R"(\p{S})", [](uint32_t c) { return in_group(c, 'S'); }},
      {R"(\p{M})", [](uint32_t c) { return in_group(c, 'M'); }},
      {R"(\p{Z})", [](uint32_t c) { return in_group(c, 'Z'); }},
      {R"(\p{C})", [](uint32_t c) { return in_group(c, 'C'); }},
      {R"(\s)", [](uint32_t c) { return is_whitespace(c); }},
      {R"(\S)", [](uint32_t c) { return !is_whitespace(c); }},
      {R"([^\s\p{L}\p{N}])",
       [](uint32_t c) { return !is_whitespace(c) && !in_group(c, 'L') && !in_group(c, 'N'); }},
      {R"([^\r\n\p{L}\p{N}])",
       [](uint32_t c) { return c != '\r' && c != '\n' && !in_group(c, 'L') && !in_group(c, 'N'); }},
      {R"([\p{L}\p{M}])", [](uint32_t c) { return in_group(c, 'L') || in_group(c, 'M'); }},
  };
  for (const auto& tc : cases) {
    const std::string pattern = tc.pattern;
    if (!all && (pattern == R"(\P{L})" || pattern == R"(\p{C})")) continue;
    const auto in = matched(space, tc.pattern, form);
    size_t mismatches = 0;
    for (uint32_t c = 0; c <= kMaxCodepoint; ++c) {
      if (c >= kSurrogateFirst && c <= kSurrogateLast) continue;
      if ((in[c] != 0) != tc.expected(c) && ++mismatches <= 5) ADD_FAILURE() << tc.pattern << " U+" << std::hex << c;
    }
    EXPECT_EQ(mismatches, 0u) << tc.pattern;
  }
}

TEST(RegexRewrite, CompiledEscapesMatchTheirDefinitionEverywhere) {
  check_everywhere(PropertyForm::kNativeWhereExact, false);
}

TEST(RegexRewriteSlow, CompiledEscapesMatchTheirDefinitionEverywhere) {
  check_everywhere(PropertyForm::kNativeWhereExact, true);
  check_everywhere(PropertyForm::kExplicitRanges, true);
}

TEST(RegexRewrite, NativeFormKeepsEscapesPcre2AgreesOn) {
  // U+2028 is the only Zl and U+2029 the only Zp in every Unicode version.
  EXPECT_EQ(rewrite_unicode_properties(R"(\p{Zl}+)"), R"(\p{Zl}+)");
  EXPECT_EQ(rewrite_unicode_properties(R"(\P{Zp})"), R"(\P{Zp})");
  EXPECT_EQ(rewrite_unicode_properties(R"([^\p{Zl}\p{Zp}x])"), R"([^\p{Zl}\p{Zp}x])");
  EXPECT_EQ(rewrite_unicode_properties(R"([^\s\p{Zl}])"), R"([^\p{Zl})" + kWhiteSpace + "]");
  // A PCRE2 escape is not folded by (?i); nothing needs shielding.
  EXPECT_EQ(rewrite_unicode_properties(R"((?i)a\p{Zl}[\p{Zp}])"), R"((?i)a\p{Zl}[\p{Zp}])");
}

TEST(Pcre2Categories, DifferencesAreRealAndIncludeUnicode15Additions) {
  const auto* diffs = pcre2_category_differences();
  ASSERT_NE(diffs, nullptr);
  for (const auto& d : *diffs) {
    EXPECT_NE(d.pcre2_category, d.utf8proc_category) << std::hex << d.cpt;
    EXPECT_EQ(d.utf8proc_category, utf8proc_category(static_cast<utf8proc_int32_t>(d.cpt))) << std::hex << d.cpt;
  }
  char version[32] = {};
  pcre2_config(PCRE2_CONFIG_UNICODE_VERSION, version);
  if (std::stoi(version) >= 15) GTEST_SKIP() << "PCRE2 has Unicode " << version;
  // Unicode 15.0 assigned U+1E030 (Lm): unassigned (Cn) for older tables.
  const auto it = std::find_if(diffs->begin(), diffs->end(), [](const auto& d) { return d.cpt == 0x1E030; });
  ASSERT_NE(it, diffs->end());
  EXPECT_EQ(it->pcre2_category, UTF8PROC_CATEGORY_CN);
  EXPECT_EQ(it->utf8proc_category, UTF8PROC_CATEGORY_LM);
}

}  // namespace
}  // namespace ferrite::tokenizer
