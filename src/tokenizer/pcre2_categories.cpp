#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/pcre2_categories.h"

#include <pcre2.h>
#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <memory>
#include <optional>
#include <string>

#include "tokenizer/unicode.h"

namespace ferrite::tokenizer {
namespace {

// PCRE2's names of the utf8proc categories, by UTF8PROC_CATEGORY_* value.
constexpr std::array<const char*, UTF8PROC_CATEGORY_CO + 1> kNames = {
    "Cn", "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps",
    "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co"};

struct CodeDeleter {
  void operator()(pcre2_code* c) const { pcre2_code_free(c); }
};
struct MatchDataDeleter {
  void operator()(pcre2_match_data* m) const { pcre2_match_data_free(m); }
};
using Code = std::unique_ptr<pcre2_code, CodeDeleter>;
using MatchData = std::unique_ptr<pcre2_match_data, MatchDataDeleter>;

Code compile_anchored(const std::string& re) {
  int err = 0;
  PCRE2_SIZE off = 0;
  Code code(pcre2_compile(reinterpret_cast<PCRE2_SPTR>(re.data()), re.size(), PCRE2_UTF | PCRE2_ANCHORED, &err,
                          &off, nullptr));
  if (code) pcre2_jit_compile(code.get(), PCRE2_JIT_COMPLETE);
  return code;
}

// A run of code points with one utf8proc category, and its bytes in the text.
struct Run {
  int category;
  size_t begin;
  size_t end;
};

std::optional<std::vector<CategoryDifference>> compute() {
  // The code space in UTF-8, cut into runs of equal utf8proc category.
  std::string text;
  std::vector<Run> runs;
  for (uint32_t c = 0; c <= kMaxCodepoint; ++c) {
    if (c >= kSurrogateFirst && c <= kSurrogateLast) continue;
    const int cat = utf8proc_category(static_cast<utf8proc_int32_t>(c));
    if (runs.empty() || runs.back().category != cat) runs.push_back(Run{cat, text.size(), text.size()});
    append_utf8(text, c);
    runs.back().end = text.size();
  }
  // One anchored possessive loop per category; the alternation names the
  // PCRE2 category of a single character (group k + 1 for category k).
  std::array<Code, kNames.size()> loops;
  std::string alternation;
  for (size_t k = 0; k < kNames.size(); ++k) {
    loops[k] = compile_anchored(std::string("\\p{") + kNames[k] + "}*+");
    if (!loops[k]) return std::nullopt;
    alternation += std::string(k ? "|" : "") + "(\\p{" + kNames[k] + "})";
  }
  const Code which = compile_anchored(alternation);
  if (!which) return std::nullopt;
  const MatchData md(pcre2_match_data_create(static_cast<uint32_t>(kNames.size() + 1), nullptr));
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());

  std::vector<CategoryDifference> diffs;
  for (const Run& run : runs) {
    size_t pos = run.begin;
    while (pos < run.end) {
      // The subject ends with the run: the loop cannot run past it.
      if (pcre2_match(loops[run.category].get(), subject, run.end, pos, PCRE2_NO_UTF_CHECK, md.get(), nullptr) < 0) {
        return std::nullopt;
      }
      pos = pcre2_get_ovector_pointer(md.get())[1];
      if (pos >= run.end) break;
      // PCRE2 disagrees on the character at `pos`.
      const int rc = pcre2_match(which.get(), subject, text.size(), pos, PCRE2_NO_UTF_CHECK, md.get(), nullptr);
      if (rc < 2) return std::nullopt;
      uint32_t cpt = 0;
      const size_t len = decode_utf8_strict(text, pos, cpt);
      if (len == 0) return std::nullopt;
      diffs.push_back(CategoryDifference{cpt, rc - 2, run.category});
      pos += len;
    }
  }
  return diffs;
}

}  // namespace

const std::vector<CategoryDifference>* pcre2_category_differences() {
  static const std::optional<std::vector<CategoryDifference>> diffs = compute();
  return diffs ? &*diffs : nullptr;
}

bool pcre2_property_within(std::string_view name, bool negated, RangeList& missing) {
  missing.clear();
  const std::vector<int>* members = category_members(name);
  const auto* diffs = pcre2_category_differences();
  if (!members || !diffs) return false;
  const auto in = [&](int cat) {
    return (std::find(members->begin(), members->end(), cat) != members->end()) != negated;
  };
  for (const auto& d : *diffs) {
    const bool ours = in(d.utf8proc_category);
    const bool theirs = in(d.pcre2_category);
    if (theirs && !ours) return false;
    if (ours && !theirs) {
      // Ascending code points: extend the last range or start one.
      if (!missing.empty() && missing.back().last + 1 == d.cpt) {
        missing.back().last = d.cpt;
      } else {
        missing.push_back(CodepointRange{d.cpt, d.cpt});
      }
    }
  }
  return true;
}

}  // namespace ferrite::tokenizer
