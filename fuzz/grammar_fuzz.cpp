// libFuzzer target for the grammar module: any byte string, read as a GBNF
// grammar, as a JSON schema, and as text to match, must either work or raise
// a ferrite::Error; never crash, hang or allocate without bound.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "grammar/token_trie.h"

namespace {

constexpr size_t kMaxInput = 64 * 1024;

void exercise(const ferrite::grammar::Grammar& g, std::string_view text) {
  using namespace ferrite::grammar;
  MatcherLimits limits;
  limits.max_stacks = 512;
  limits.max_store_entries = 1 << 16;
  Matcher m(std::make_shared<const Grammar>(g), limits);
  static const TokenTrie trie({"<eos>", "a", "ab", "{", "\"", " ", "1", "\xC3", "\xA9", "\xE2\x82\xAC", "\n", "]"},
                              {0});
  (void)m.allowed(trie);
  for (size_t i = 0; i < text.size() && i < 256; ++i) {
    (void)m.accept_bytes(text.substr(i, 1));
    if (i % 16 == 0) (void)m.allowed(trie);
  }
  (void)m.is_complete();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > kMaxInput) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  ferrite::grammar::Limits limits;
  limits.max_elements = 1 << 16;
  limits.max_repetition = 1000;
  // The input as a grammar, matched against its own text.
  try {
    const auto g = ferrite::grammar::Grammar::parse(input, "root", limits);
    (void)g.to_gbnf();
    exercise(g, input);
  } catch (const ferrite::Error&) {
  }
  // The input as a JSON schema; its grammar must parse.
  try {
    const std::string gbnf = ferrite::grammar::json_schema_to_gbnf(input);
    const auto g = ferrite::grammar::Grammar::parse(gbnf);
    exercise(g, "{\"a\": [1, \"x\"], \"b\": null}");
  } catch (const ferrite::Error&) {
  }
  return 0;
}
