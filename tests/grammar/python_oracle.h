// Independent reference for the JSON schema tests: Python's json module
// (well-formedness) and the jsonschema package (validation), run once per
// batch through a pipe. Each case is {"schema": ..., "instances": [text...]}
// and the answer is, per instance, whether it parses and validates.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "support/test_data.h"

namespace ferrite::grammar::test {

inline constexpr const char* kOracleScript = R"PY(
import json, sys
import jsonschema
cases = json.load(open(sys.argv[1]))
out = []
for case in cases:
    cls = jsonschema.validators.validator_for(case["schema"])
    v = cls(case["schema"])
    row = []
    for text in case["instances"]:
        try:
            value = json.loads(text)
        except ValueError:
            row.append(False)
            continue
        row.append(v.is_valid(value))
    out.append(row)
print(json.dumps(out))
)PY";

// Returns nullopt (after failing in CI or skipping locally) when Python or
// jsonschema is missing.
inline std::optional<std::vector<std::vector<bool>>> python_validate(const nlohmann::json& cases) {
  const auto dir = std::filesystem::temp_directory_path();
  const std::string stem = "ferrite_grammar_oracle_" + std::to_string(::getpid());
  const auto script = dir / (stem + ".py");
  const auto input = dir / (stem + ".json");
  std::ofstream(script) << kOracleScript;
  std::ofstream(input) << cases.dump();
  const std::string cmd = "python3 " + script.string() + " " + input.string() + " 2>&1";
  std::string output;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) output.append(buf, n);
    ::pclose(p);
  }
  std::filesystem::remove(script);
  std::filesystem::remove(input);
  try {
    return nlohmann::json::parse(output).get<std::vector<std::vector<bool>>>();
  } catch (const nlohmann::json::exception&) {
    if (::ferrite::test::in_ci()) {
      ADD_FAILURE() << "python3 with jsonschema is required: " << output;
    } else {
      std::fprintf(stderr, "skipping: python3 with jsonschema unavailable: %s\n", output.c_str());
    }
    return std::nullopt;
  }
}

}  // namespace ferrite::grammar::test
