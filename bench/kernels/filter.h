// The --filter of the kernel lab: a case-insensitive PCRE2 pattern searched
// in a case's "op type shape" label (PCRE2 is already a dependency of the
// tokenizer; std::regex draws false -Wmaybe-uninitialized warnings from GCC 12).
#pragma once

#ifndef PCRE2_CODE_UNIT_WIDTH
#define PCRE2_CODE_UNIT_WIDTH 8
#endif
#include <pcre2.h>

#include <memory>
#include <string>

#include "core/error.h"

namespace ferrite::kbench {

class Filter {
 public:
  // An empty pattern selects everything. Throws InvalidArgument for a bad pattern.
  explicit Filter(const std::string& pattern) {
    if (pattern.empty()) return;
    int err = 0;
    PCRE2_SIZE offset = 0;
    code_.reset(pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                              PCRE2_CASELESS | PCRE2_UTF, &err, &offset, nullptr));
    if (!code_) {
      PCRE2_UCHAR msg[kMessageBytes];
      pcre2_get_error_message(err, msg, sizeof(msg));
      throw InvalidArgument("--filter: bad regular expression '" + pattern + "' at offset " + std::to_string(offset) +
                            ": " + reinterpret_cast<const char*>(msg));
    }
    data_.reset(pcre2_match_data_create_from_pattern(code_.get(), nullptr));
  }

  bool matches(const std::string& s) const {
    if (!code_) return true;
    return pcre2_match(code_.get(), reinterpret_cast<PCRE2_SPTR>(s.data()), s.size(), 0, 0, data_.get(), nullptr) >= 0;
  }

 private:
  static constexpr size_t kMessageBytes = 256;
  struct FreeCode {
    void operator()(pcre2_code* c) const { pcre2_code_free(c); }
  };
  struct FreeData {
    void operator()(pcre2_match_data* d) const { pcre2_match_data_free(d); }
  };
  std::unique_ptr<pcre2_code, FreeCode> code_;
  std::unique_ptr<pcre2_match_data, FreeData> data_;
};

}  // namespace ferrite::kbench
