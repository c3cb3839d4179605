#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/pretokenizer.h"

#include <pcre2.h>

#include "core/error.h"
#include "tokenizer/regex_rewrite.h"

namespace ferrite::tokenizer {
// Named, not anonymous: PreTokenizer::Impl (external linkage) holds these
// (gcc's -Wsubobject-linkage in unity builds).
namespace pretokenizer_detail {

struct Compiled {
  pcre2_code* code = nullptr;
  bool jit = false;
};

}  // namespace pretokenizer_detail

struct PreTokenizer::Impl {
  std::vector<pretokenizer_detail::Compiled> res;
  ~Impl() {
    for (auto& r : res) pcre2_code_free(r.code);
  }
};

PreTokenizer::PreTokenizer(const std::vector<std::string>& regexes) : impl_(std::make_unique<Impl>()) {
  for (const auto& src : regexes) {
    // Property escapes become explicit Unicode 15 classes; without
    // PCRE2_UCP, \d and \w keep their ASCII meaning, as in the reference.
    const std::string re = rewrite_unicode_properties(src);
    int err = 0;
    PCRE2_SIZE err_off = 0;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(re.data()), re.size(),
                                     PCRE2_UTF | PCRE2_DOLLAR_ENDONLY | PCRE2_NO_UTF_CHECK, &err,
                                     &err_off, nullptr);
    if (!code) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof msg);
      throw ModelError("pre-tokenizer regex does not compile at offset " + std::to_string(err_off) +
                       " of its rewritten form: " +
                       reinterpret_cast<const char*>(msg) + " (" + src + ")");
    }
    pretokenizer_detail::Compiled c;
    c.code = code;
    c.jit = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
    impl_->res.push_back(c);
  }
}

PreTokenizer::~PreTokenizer() = default;

bool PreTokenizer::jit_compiled() const {
  for (const auto& r : impl_->res) {
    if (!r.jit) return false;
  }
  return true;
}

void PreTokenizer::split(std::string_view text, std::vector<Span>& out) const {
  out.clear();
  if (text.empty()) return;
  out.push_back(Span{0, static_cast<uint32_t>(text.size())});
  std::vector<Span> next;
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  for (const auto& re : impl_->res) {
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(re.code, nullptr);
    next.clear();
    next.reserve(out.size() * 2);
    for (const Span& s : out) {
      // Match inside the word only: its end is the end of the subject.
      const PCRE2_SPTR base = subject + s.begin;
      const PCRE2_SIZE len = s.end - s.begin;
      PCRE2_SIZE pos = 0;
      PCRE2_SIZE last = 0;  // end of the previous match
      while (pos <= len) {
        const int rc = re.jit ? pcre2_jit_match(re.code, base, len, pos, 0, md, nullptr)
                              : pcre2_match(re.code, base, len, pos, PCRE2_NO_UTF_CHECK, md, nullptr);
        if (rc < 0) break;
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
        const PCRE2_SIZE mb = ov[0], me = ov[1];
        if (mb > last) next.push_back(Span{s.begin + static_cast<uint32_t>(last), s.begin + static_cast<uint32_t>(mb)});
        if (me > mb) {
          next.push_back(Span{s.begin + static_cast<uint32_t>(mb), s.begin + static_cast<uint32_t>(me)});
          last = me;
          pos = me;
        } else {
          // Empty match: it splits here; step over one character.
          last = mb;
          if (mb >= len) break;
          pos = mb + 1;
          while (pos < len && (base[pos] & 0xC0) == 0x80) ++pos;
        }
      }
      if (last < len) next.push_back(Span{s.begin + static_cast<uint32_t>(last), s.end});
    }
    pcre2_match_data_free(md);
    out.swap(next);
  }
}

}  // namespace ferrite::tokenizer
