#include "tokenizer/unicode_ranges.h"

#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

#include "tokenizer/unicode.h"

namespace ferrite::tokenizer {
namespace {

// utf8proc's category enum runs from UTF8PROC_CATEGORY_CN (0) to
// UTF8PROC_CATEGORY_CO (29).
constexpr int kNumCategories = UTF8PROC_CATEGORY_CO + 1;

struct NamedCategory {
  const char* name;  // lower case, as normalized
  std::vector<int> members;
};

const std::vector<NamedCategory>& named_categories() {
  static const std::vector<NamedCategory> t = {
      {"lu", {UTF8PROC_CATEGORY_LU}},
      {"ll", {UTF8PROC_CATEGORY_LL}},
      {"lt", {UTF8PROC_CATEGORY_LT}},
      {"lm", {UTF8PROC_CATEGORY_LM}},
      {"lo", {UTF8PROC_CATEGORY_LO}},
      {"mn", {UTF8PROC_CATEGORY_MN}},
      {"mc", {UTF8PROC_CATEGORY_MC}},
      {"me", {UTF8PROC_CATEGORY_ME}},
      {"nd", {UTF8PROC_CATEGORY_ND}},
      {"nl", {UTF8PROC_CATEGORY_NL}},
      {"no", {UTF8PROC_CATEGORY_NO}},
      {"pc", {UTF8PROC_CATEGORY_PC}},
      {"pd", {UTF8PROC_CATEGORY_PD}},
      {"ps", {UTF8PROC_CATEGORY_PS}},
      {"pe", {UTF8PROC_CATEGORY_PE}},
      {"pi", {UTF8PROC_CATEGORY_PI}},
      {"pf", {UTF8PROC_CATEGORY_PF}},
      {"po", {UTF8PROC_CATEGORY_PO}},
      {"sm", {UTF8PROC_CATEGORY_SM}},
      {"sc", {UTF8PROC_CATEGORY_SC}},
      {"sk", {UTF8PROC_CATEGORY_SK}},
      {"so", {UTF8PROC_CATEGORY_SO}},
      {"zs", {UTF8PROC_CATEGORY_ZS}},
      {"zl", {UTF8PROC_CATEGORY_ZL}},
      {"zp", {UTF8PROC_CATEGORY_ZP}},
      {"cc", {UTF8PROC_CATEGORY_CC}},
      {"cf", {UTF8PROC_CATEGORY_CF}},
      {"cs", {UTF8PROC_CATEGORY_CS}},
      {"co", {UTF8PROC_CATEGORY_CO}},
      {"cn", {UTF8PROC_CATEGORY_CN}},
      {"l",
       {UTF8PROC_CATEGORY_LU, UTF8PROC_CATEGORY_LL, UTF8PROC_CATEGORY_LT, UTF8PROC_CATEGORY_LM,
        UTF8PROC_CATEGORY_LO}},
      {"lc", {UTF8PROC_CATEGORY_LU, UTF8PROC_CATEGORY_LL, UTF8PROC_CATEGORY_LT}},
      {"l&", {UTF8PROC_CATEGORY_LU, UTF8PROC_CATEGORY_LL, UTF8PROC_CATEGORY_LT}},
      {"m", {UTF8PROC_CATEGORY_MN, UTF8PROC_CATEGORY_MC, UTF8PROC_CATEGORY_ME}},
      {"n", {UTF8PROC_CATEGORY_ND, UTF8PROC_CATEGORY_NL, UTF8PROC_CATEGORY_NO}},
      {"p",
       {UTF8PROC_CATEGORY_PC, UTF8PROC_CATEGORY_PD, UTF8PROC_CATEGORY_PS, UTF8PROC_CATEGORY_PE,
        UTF8PROC_CATEGORY_PI, UTF8PROC_CATEGORY_PF, UTF8PROC_CATEGORY_PO}},
      {"s", {UTF8PROC_CATEGORY_SM, UTF8PROC_CATEGORY_SC, UTF8PROC_CATEGORY_SK, UTF8PROC_CATEGORY_SO}},
      {"z", {UTF8PROC_CATEGORY_ZS, UTF8PROC_CATEGORY_ZL, UTF8PROC_CATEGORY_ZP}},
      {"c",
       {UTF8PROC_CATEGORY_CC, UTF8PROC_CATEGORY_CF, UTF8PROC_CATEGORY_CS, UTF8PROC_CATEGORY_CO,
        UTF8PROC_CATEGORY_CN}},
  };
  return t;
}

void append_range(RangeList& out, uint32_t first, uint32_t last) {
  if (!out.empty() && out.back().last + 1 >= first) {
    out.back().last = std::max(out.back().last, last);
  } else {
    out.push_back(CodepointRange{first, last});
  }
}

// Adds [first, last] to `out` with the surrogates cut out.
void append_without_surrogates(RangeList& out, uint32_t first, uint32_t last) {
  if (last < kSurrogateFirst || first > kSurrogateLast) {
    append_range(out, first, last);
    return;
  }
  if (first < kSurrogateFirst) append_range(out, first, kSurrogateFirst - 1);
  if (last > kSurrogateLast) append_range(out, kSurrogateLast + 1, last);
}

struct Tables {
  std::vector<std::pair<std::string, RangeList>> by_name;
  RangeList whitespace;
};

const Tables& tables() {
  static const Tables t = [] {
    // One pass over every code point: runs of equal category.
    std::array<RangeList, kNumCategories> per_cat;
    uint32_t run_start = 0;
    int run_cat = utf8proc_category(0);
    for (uint32_t c = 1; c <= kMaxCodepoint + 1; ++c) {
      const int cat = c <= kMaxCodepoint ? utf8proc_category(static_cast<utf8proc_int32_t>(c)) : -1;
      if (cat == run_cat) continue;
      if (run_cat >= 0 && run_cat < kNumCategories) append_without_surrogates(per_cat[run_cat], run_start, c - 1);
      run_start = c;
      run_cat = cat;
    }
    Tables out;
    for (const auto& nc : named_categories()) {
      RangeList merged;
      for (int m : nc.members) merged = union_ranges(merged, per_cat[m]);
      out.by_name.emplace_back(nc.name, std::move(merged));
    }
    out.by_name.emplace_back("any", complement_ranges({}));
    for (uint32_t c = 0; c <= kMaxCodepoint; ++c) {
      if (is_whitespace(c)) append_range(out.whitespace, c, c);
    }
    return out;
  }();
  return t;
}

}  // namespace

const RangeList* category_ranges(std::string_view name) {
  std::string key;
  for (char ch : name) {
    if (ch == ' ' || ch == '_' || ch == '-') continue;
    key.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
  }
  for (const auto& [n, ranges] : tables().by_name) {
    if (n == key) return &ranges;
  }
  return nullptr;
}

const RangeList& whitespace_ranges() { return tables().whitespace; }

RangeList union_ranges(const RangeList& a, const RangeList& b) {
  RangeList all;
  all.reserve(a.size() + b.size());
  std::merge(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(all),
             [](const CodepointRange& x, const CodepointRange& y) { return x.first < y.first; });
  RangeList out;
  for (const auto& r : all) append_range(out, r.first, r.last);
  return out;
}

RangeList complement_ranges(const RangeList& a) {
  RangeList out;
  uint32_t next = 0;  // first code point not yet covered
  for (const auto& r : a) {
    if (r.first > next) append_without_surrogates(out, next, r.first - 1);
    next = r.last + 1;
  }
  if (next <= kMaxCodepoint) append_without_surrogates(out, next, kMaxCodepoint);
  return out;
}

bool ranges_contain(const RangeList& ranges, uint32_t cpt) {
  auto it = std::upper_bound(ranges.begin(), ranges.end(), cpt,
                             [](uint32_t c, const CodepointRange& r) { return c < r.first; });
  return it != ranges.begin() && std::prev(it)->last >= cpt;
}

}  // namespace ferrite::tokenizer
