// The backends' run-time switches (backend/switches.h): parsed from a
// lookup of variable names as the environment spells them, every one with
// its default when absent, malformed values refused, and described back in
// the spelling that sets them.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "backend/switches.h"
#include "core/error.h"

namespace ferrite {
namespace {

std::map<std::string, std::string> g_env;

const char* lookup(const char* name) {
  const auto it = g_env.find(name);
  return it == g_env.end() ? nullptr : it->second.c_str();
}

backend::Switches parse(std::map<std::string, std::string> env) {
  g_env = std::move(env);
  return backend::parse_switches(lookup);
}

TEST(Switches, DefaultsWhenNothingIsSet) {
  const backend::Switches s = parse({});
  EXPECT_TRUE(s.repack && s.repack_float && s.repack_q6k && s.amx);
  EXPECT_FALSE(s.cuda_exact);
  EXPECT_TRUE(s.cuda_graphs && s.cuda_fuse && s.cuda_fuse_attn && s.cuda_fuse_rope);
  EXPECT_EQ(s.cuda_pdl, 2);
  EXPECT_EQ(s.cuda_attn_warps, 0);
  EXPECT_EQ(s.cuda_mma_min_rows, 5);
  EXPECT_EQ(s.cuda_mma_max_rows, 128);
}

TEST(Switches, EachVariableTurnsItsSwitch) {
  const backend::Switches s = parse({{"FERRITE_REPACK", "0"},
                                     {"FERRITE_REPACK_FLOAT", "0"},
                                     {"FERRITE_REPACK_Q6K", "0"},
                                     {"FERRITE_AMX", "0"},
                                     {"FERRITE_CUDA_EXACT", "1"},
                                     {"FERRITE_CUDA_GRAPHS", "0"},
                                     {"FERRITE_CUDA_PDL", "gemv"},
                                     {"FERRITE_CUDA_ATTN_WARPS", "8"},
                                     {"FERRITE_CUDA_MMA_ROWS", "9:64"}});
  EXPECT_FALSE(s.repack || s.repack_float || s.repack_q6k || s.amx || s.cuda_graphs);
  EXPECT_TRUE(s.cuda_exact);
  EXPECT_EQ(s.cuda_pdl, 1);
  EXPECT_EQ(s.cuda_attn_warps, 8);
  EXPECT_EQ(s.cuda_mma_min_rows, 9);
  EXPECT_EQ(s.cuda_mma_max_rows, 64);
  // Anything but "0" leaves an on-switch on; only "1" turns exact mode on.
  EXPECT_TRUE(parse({{"FERRITE_REPACK", "no"}}).repack);
  EXPECT_FALSE(parse({{"FERRITE_CUDA_EXACT", "yes"}}).cuda_exact);
}

TEST(Switches, FuseTakesItsThreeSpellings) {
  const backend::Switches off = parse({{"FERRITE_CUDA_FUSE", "0"}});
  EXPECT_FALSE(off.cuda_fuse || off.cuda_fuse_attn || off.cuda_fuse_rope);
  const backend::Switches noattn = parse({{"FERRITE_CUDA_FUSE", "noattn"}});
  EXPECT_TRUE(noattn.cuda_fuse && noattn.cuda_fuse_rope);
  EXPECT_FALSE(noattn.cuda_fuse_attn);
  const backend::Switches norope = parse({{"FERRITE_CUDA_FUSE", "norope"}});
  EXPECT_TRUE(norope.cuda_fuse && norope.cuda_fuse_attn);
  EXPECT_FALSE(norope.cuda_fuse_rope);
  EXPECT_EQ(parse({{"FERRITE_CUDA_PDL", "0"}}).cuda_pdl, 0);
}

TEST(Switches, MalformedValuesAreErrors) {
  for (const char* rows : {"", "5", "0:4", "9:3", "a:b"}) {
    EXPECT_THROW(parse({{"FERRITE_CUDA_MMA_ROWS", rows}}), InvalidArgument) << rows;
  }
  for (const char* warps : {"3", "32", "-4"}) {
    EXPECT_THROW(parse({{"FERRITE_CUDA_ATTN_WARPS", warps}}), InvalidArgument) << warps;
  }
}

TEST(Switches, DescribedInTheSpellingThatSetsThem) {
  const std::map<std::string, std::string> env = {{"FERRITE_REPACK", "0"},
                                                  {"FERRITE_CUDA_FUSE", "noattn"},
                                                  {"FERRITE_CUDA_PDL", "gemv"},
                                                  {"FERRITE_CUDA_MMA_ROWS", "9:64"}};
  const auto described = backend::describe(parse(env));
  ASSERT_EQ(described.size(), 10u);
  std::map<std::string, std::string> got(described.begin(), described.end());
  for (const auto& [name, value] : env) EXPECT_EQ(got[name], value) << name;
  EXPECT_EQ(got["FERRITE_AMX"], "1");
  // Parsing the description gives the same switches back.
  const backend::Switches again = parse(got);
  EXPECT_EQ(backend::describe(again), described);
}

}  // namespace
}  // namespace ferrite
