// `ferrite bench`: the shape of its table (llama-bench's columns plus the
// fraction of the hardware limit), JSON and CSV output, depths, and bad
// flags refused with an error. Speeds are not checked (no timing assertions),
// only that they are positive numbers.
#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "cli_util.h"
#include "support/test_data.h"

namespace {

using ferrite::test::run_ferrite;
using nlohmann::json;

// A small probe buffer keeps the runs cheap; the numbers are not checked.
const std::vector<std::string> kQuick = {"-t", "1", "-r", "2", "--probe-mib", "8"};

std::vector<std::string> args(const std::string& model, std::vector<std::string> extra) {
  std::vector<std::string> a = {"bench", "-m", model};
  a.insert(a.end(), extra.begin(), extra.end());
  a.insert(a.end(), kQuick.begin(), kQuick.end());
  return a;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cell;
  std::istringstream in(s);
  while (std::getline(in, cell, sep)) out.push_back(cell);
  return out;
}

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(' ');
  const size_t e = s.find_last_not_of(' ');
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// The cells of the markdown table's lines (those starting with '|').
std::vector<std::vector<std::string>> table(const std::string& out) {
  std::vector<std::vector<std::string>> rows;
  for (const std::string& line : split(out, '\n')) {
    if (line.empty() || line[0] != '|') continue;
    std::vector<std::string> cells = split(line.substr(1), '|');
    for (auto& c : cells) c = trim(c);
    rows.push_back(cells);
  }
  return rows;
}

TEST(CliBench, MarkdownTableHasLlamaBenchColumnsAndOneRowPerTest) {
  FERRITE_SHARED_FILE(model, "models/stories260K.gguf");
  const auto r = run_ferrite(args(model.string(), {"-p", "8", "-n", "4"}));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("read "), std::string::npos) << "the bandwidth probe is printed";
  const auto t = table(r.out);
  ASSERT_EQ(t.size(), 4u) << r.out;  // header, separator, pp8, tg4
  const std::vector<std::string> header = {"model",   "size", "params", "backend", "ngl",
                                           "threads", "test", "t/s",    "% limit"};
  EXPECT_EQ(t[0], header);
  const std::vector<std::string> tests = {"pp8", "tg4"};
  for (size_t i = 0; i < tests.size(); ++i) {
    const auto& row = t[2 + i];
    ASSERT_EQ(row.size(), header.size());
    EXPECT_EQ(row[0].rfind("llama ", 0), 0u) << row[0];
    EXPECT_EQ(row[2], "292.80 K");  // shared/README.md: 292,800 parameters
    EXPECT_EQ(row[3], "CPU");
    EXPECT_EQ(row[4], "0");
    EXPECT_EQ(row[5], "1");
    EXPECT_EQ(row[6], tests[i]);
    EXPECT_GT(std::stod(row[7]), 0.0) << row[7];
    EXPECT_NE(row[7].find(" ± "), std::string::npos) << row[7];
    EXPECT_EQ(row[8].back(), '%') << row[8];
  }
}

TEST(CliBench, DepthsAndThreadListsMultiplyTheTests) {
  FERRITE_SHARED_FILE(model, "models/stories260K.gguf");
  const auto r = run_ferrite({"bench", "-m", model.string(), "-p", "0", "-n", "3", "--depth", "0,16", "-t", "1,2",
                              "-r", "1", "--probe-mib", "8"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto t = table(r.out);
  ASSERT_EQ(t.size(), 6u) << r.out;  // header, separator, 2 threads x 2 depths
  EXPECT_EQ(t[2][6], "tg3");
  EXPECT_EQ(t[3][6], "tg3 @ d16");
  EXPECT_EQ(t[4][5], "2");
}

TEST(CliBench, JsonRowsCarryTheTestAndItsLimit) {
  FERRITE_SHARED_FILE(model, "models/stories260K.gguf");
  const auto r = run_ferrite(args(model.string(), {"-p", "8,16", "-n", "0", "-o", "json"}));
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(r.out);
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["test"], "pp8");
  EXPECT_EQ(j[1]["test"], "pp16");
  EXPECT_EQ(j[1]["n_prompt"], 16);
  EXPECT_EQ(j[0]["model_n_params"], 292800u);
  EXPECT_EQ(j[0]["samples_ts"].size(), 2u);  // -r 2
  EXPECT_GT(j[0]["avg_ts"].get<double>(), 0.0);
  EXPECT_GT(j[0]["read_bytes_per_s"].get<double>(), 0.0);
  EXPECT_EQ(j[0]["peak_kind"], "f32-fma");  // an all-F32 model
}

TEST(CliBench, CsvRowsHaveTheHeadersColumns) {
  FERRITE_SHARED_FILE(model, "models/stories260K.gguf");
  const auto r = run_ferrite(args(model.string(), {"-p", "0", "-n", "2", "-o", "csv"}));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto lines = split(r.out, '\n');
  ASSERT_EQ(lines.size(), 2u) << r.out;
  const auto head = split(lines[0], ',');
  EXPECT_EQ(head[0], "model_filename");
  EXPECT_EQ(split(lines[1], ',').size(), head.size());
}

TEST(CliBench, BadFlagsFail) {
  FERRITE_SHARED_FILE(model, "models/stories260K.gguf");
  const std::vector<std::vector<std::string>> bad = {
      {"-r", "0"}, {"-p", "-1"}, {"-n", "-2"}, {"-t", "0"}, {"--depth", "-5"}, {"-o", "xml"}, {"-p", "abc"},
      {"-ngl", "-1"}, {"-ngl", "some"},
  };
  for (const auto& extra : bad) {
    std::vector<std::string> a = {"bench", "-m", model.string(), "--probe-mib", "8"};
    a.insert(a.end(), extra.begin(), extra.end());
    const auto r = run_ferrite(a);
    EXPECT_NE(r.status, 0) << extra[0] << " " << extra[1];
    EXPECT_FALSE(r.err.empty()) << extra[0] << " " << extra[1];
  }
  EXPECT_NE(run_ferrite({"bench", "-p", "8"}).status, 0) << "no model";
  const auto missing = run_ferrite({"bench", "-m", "/nonexistent/model.gguf", "-r", "1", "--probe-mib", "8"});
  EXPECT_NE(missing.status, 0);
  EXPECT_NE(missing.err.find("nonexistent"), std::string::npos) << missing.err;
}

#ifndef FERRITE_HAVE_CUDA
// llama.cpp scripts pass -ngl everywhere: a CPU build warns and runs on the CPU.
TEST(CliBench, GpuLayersOnACpuBuildWarnAndRun) {
  FERRITE_SHARED_FILE(model, "models/stories260K.gguf");
  const auto r = run_ferrite({"bench", model.string(), "-ngl", "99", "-p", "8", "-n", "0", "-r", "1"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("no GPU backend"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("CPU"), std::string::npos) << r.out;
}
#endif

}  // namespace
