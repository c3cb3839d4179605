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
  const char* key;        // lower case, as normalized
  const char* canonical;  // as PCRE2 spells it
  std::vector<int> members;
};

const std::vector<NamedCategory>& named_categories() {
  static const std::vector<NamedCategory> t = {
      {"lu", "Lu", {UTF8PROC_CATEGORY_LU}},
      {"ll", "Ll", {UTF8PROC_CATEGORY_LL}},
      {"lt", "Lt", {UTF8PROC_CATEGORY_LT}},
      {"lm", "Lm", {UTF8PROC_CATEGORY_LM}},
      {"lo", "Lo", {UTF8PROC_CATEGORY_LO}},
      {"mn", "Mn", {UTF8PROC_CATEGORY_MN}},
      {"mc", "Mc", {UTF8PROC_CATEGORY_MC}},
      {"me", "Me", {UTF8PROC_CATEGORY_ME}},
      {"nd", "Nd", {UTF8PROC_CATEGORY_ND}},
      {"nl", "Nl", {UTF8PROC_CATEGORY_NL}},
      {"no", "No", {UTF8PROC_CATEGORY_NO}},
      {"pc", "Pc", {UTF8PROC_CATEGORY_PC}},
      {"pd", "Pd", {UTF8PROC_CATEGORY_PD}},
      {"ps", "Ps", {UTF8PROC_CATEGORY_PS}},
      {"pe", "Pe", {UTF8PROC_CATEGORY_PE}},
      {"pi", "Pi", {UTF8PROC_CATEGORY_PI}},
      {"pf", "Pf", {UTF8PROC_CATEGORY_PF}},
      {"po", "Po", {UTF8PROC_CATEGORY_PO}},
      {"sm", "Sm", {UTF8PROC_CATEGORY_SM}},
      {"sc", "Sc", {UTF8PROC_CATEGORY_SC}},
      {"sk", "Sk", {UTF8PROC_CATEGORY_SK}},
      {"so", "So", {UTF8PROC_CATEGORY_SO}},
      {"zs", "Zs", {UTF8PROC_CATEGORY_ZS}},
      {"zl", "Zl", {UTF8PROC_CATEGORY_ZL}},
      {"zp", "Zp", {UTF8PROC_CATEGORY_ZP}},
      {"cc", "Cc", {UTF8PROC_CATEGORY_CC}},
      {"cf", "Cf", {UTF8PROC_CATEGORY_CF}},
      {"cs", "Cs", {UTF8PROC_CATEGORY_CS}},
      {"co", "Co", {UTF8PROC_CATEGORY_CO}},
      {"cn", "Cn", {UTF8PROC_CATEGORY_CN}},
      {"l", "L",
       {UTF8PROC_CATEGORY_LU, UTF8PROC_CATEGORY_LL, UTF8PROC_CATEGORY_LT, UTF8PROC_CATEGORY_LM,
        UTF8PROC_CATEGORY_LO}},
      {"lc", "L&", {UTF8PROC_CATEGORY_LU, UTF8PROC_CATEGORY_LL, UTF8PROC_CATEGORY_LT}},
      {"l&", "L&", {UTF8PROC_CATEGORY_LU, UTF8PROC_CATEGORY_LL, UTF8PROC_CATEGORY_LT}},
      {"m", "M", {UTF8PROC_CATEGORY_MN, UTF8PROC_CATEGORY_MC, UTF8PROC_CATEGORY_ME}},
      {"n", "N", {UTF8PROC_CATEGORY_ND, UTF8PROC_CATEGORY_NL, UTF8PROC_CATEGORY_NO}},
      {"p", "P",
       {UTF8PROC_CATEGORY_PC, UTF8PROC_CATEGORY_PD, UTF8PROC_CATEGORY_PS, UTF8PROC_CATEGORY_PE,
        UTF8PROC_CATEGORY_PI, UTF8PROC_CATEGORY_PF, UTF8PROC_CATEGORY_PO}},
      {"s", "S", {UTF8PROC_CATEGORY_SM, UTF8PROC_CATEGORY_SC, UTF8PROC_CATEGORY_SK, UTF8PROC_CATEGORY_SO}},
      {"z", "Z", {UTF8PROC_CATEGORY_ZS, UTF8PROC_CATEGORY_ZL, UTF8PROC_CATEGORY_ZP}},
      {"c", "C",
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
  std::vector<std::pair<std::string, RangeList>> by_key;
  RangeList whitespace;
};

std::string normalize(std::string_view name) {
  std::string key;
  for (char ch : name) {
    if (ch == ' ' || ch == '_' || ch == '-') continue;
    key.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
  }
  return key;
}

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
      out.by_key.emplace_back(nc.key, std::move(merged));
    }
    out.by_key.emplace_back("any", complement_ranges({}));
    for (uint32_t c = 0; c <= kMaxCodepoint; ++c) {
      if (is_whitespace(c)) append_range(out.whitespace, c, c);
    }
    return out;
  }();
  return t;
}

}  // namespace

const RangeList* category_ranges(std::string_view name) {
  const std::string key = normalize(name);
  for (const auto& [k, ranges] : tables().by_key) {
    if (k == key) return &ranges;
  }
  return nullptr;
}

const std::vector<int>* category_members(std::string_view name, std::string* canonical) {
  static const std::vector<int> kAny = [] {
    std::vector<int> all;
    for (int k = 0; k < kNumCategories; ++k) all.push_back(k);
    return all;
  }();
  const std::string key = normalize(name);
  if (key == "any") {
    if (canonical) *canonical = "Any";
    return &kAny;
  }
  for (const auto& nc : named_categories()) {
    if (key == nc.key) {
      if (canonical) *canonical = nc.canonical;
      return &nc.members;
    }
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
