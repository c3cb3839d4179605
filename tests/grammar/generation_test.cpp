// Constrained generation end to end: a seeded random "model" picks among the
// tokens the filter allows (a vocabulary with multi-character and split
// UTF-8 tokens), stopping on end-of-generation; every finished text must be
// JSON that Python's jsonschema accepts under the schema that made the
// grammar.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "grammar/token_trie.h"
#include "python_oracle.h"

namespace ferrite::grammar {
namespace {

std::vector<std::string> json_vocabulary() {
  std::vector<std::string> v = {"<eos>"};
  for (int c = 0x20; c < 0x7F; ++c) v.push_back(std::string(1, static_cast<char>(c)));
  for (const char* t : {"{\"", "\":", "\": ", "\",", "\", \"", " \"", "true", "false", "null", "12", "-3",
                        "0.5", "e+", "]}", "}]", "[{", "\\n", "\\\"", "\\u00e9", "name", "age", "tags", "id",
                        "\n ", "\n  ", "\xC3", "\xA9", "\xC3\xA9", "\xE2\x82", "\xAC", "\xE2\x82\xAC", "ab",
                        "2024", "-01-", "T12:", "00:00Z", "\"}", "\"]", "value", "next", "-4", "ff", "\t"}) {
    v.push_back(t);
  }
  return v;
}

bool structural(const std::string& piece) {
  return piece.find_first_of("\"{}[],:0123456789") != std::string::npos || piece == "true" ||
         piece == "null";
}

TEST(GrammarGeneration, SampledJsonValidatesAgainstSchema) {
  const std::vector<const char*> schemas = {
      R"({"type": "object", "properties": {"name": {"type": "string", "maxLength": 6},
          "age": {"type": "integer", "minimum": 0, "maximum": 150},
          "tags": {"type": "array", "items": {"enum": ["a", "b", "ff"]}, "maxItems": 3}},
          "required": ["name", "age"], "additionalProperties": false})",
      R"({"$defs": {"node": {"type": "object", "properties": {"value": {"type": "integer"},
          "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}},
          "required": ["value", "next"], "additionalProperties": false}}, "$ref": "#/$defs/node"})",
      R"({"type": "array", "items": {"type": "string", "format": "date"}, "minItems": 1, "maxItems": 2})",
      R"({"type": "array", "items": {"type": "string", "pattern": "^[a-f]{2}-[0-9]+$"}, "maxItems": 3})",
      R"({"anyOf": [{"type": "number"}, {"type": "boolean"}, {"type": "null"},
          {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"],
           "additionalProperties": false}]})",
  };
  const std::vector<std::string> vocab = json_vocabulary();
  const TokenTrie trie(vocab, {0});
  std::mt19937 rng(20250214);
  nlohmann::json batch = nlohmann::json::array();
  size_t finished = 0, attempted = 0;
  for (const char* schema : schemas) {
    const Grammar g = Grammar::parse(json_schema_to_gbnf(std::string_view(schema)));
    nlohmann::json texts = nlohmann::json::array();
    for (int seed = 0; seed < 12; ++seed) {
      ++attempted;
      Matcher m(g);
      std::string text;
      bool done = false;
      for (int step = 0; step < 400 && !done; ++step) {
        const TokenMask& mask = m.allowed(trie);
        std::vector<size_t> all, preferred;
        for (size_t t = 1; t < vocab.size(); ++t) {
          if (!mask.test(t)) continue;
          all.push_back(t);
          if (structural(vocab[t])) preferred.push_back(t);
        }
        if (mask.test(0) && (all.empty() || rng() % 2 == 0)) {
          done = true;
          break;
        }
        ASSERT_FALSE(all.empty()) << "dead end: " << text;
        const auto& pool = (!preferred.empty() && rng() % 10 < 7) ? preferred : all;
        const size_t t = pool[rng() % pool.size()];
        ASSERT_TRUE(m.accept_token(vocab[t]));
        text += vocab[t];
      }
      if (done) {
        ++finished;
        texts.push_back(text);
      }
    }
    batch.push_back({{"schema", nlohmann::json::parse(schema)}, {"instances", texts}});
  }
  EXPECT_GE(finished * 2, attempted) << "most walks should finish";
  const auto verdicts = test::python_validate(batch);
  if (!verdicts) return;
  for (size_t i = 0; i < batch.size(); ++i) {
    for (size_t j = 0; j < (*verdicts)[i].size(); ++j) {
      EXPECT_TRUE((*verdicts)[i][j]) << "schema " << schemas[i] << "\ngenerated "
                                     << batch[i]["instances"][j].get<std::string>();
    }
  }
}

}  // namespace
}  // namespace ferrite::grammar
