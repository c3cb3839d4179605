// ik_llama.cpp's families (tests/model/tiny_families.h tiny_ik_families():
// smollm3, glm4, ernie4_5, ernie4_5-moe, hunyuan-moe, glm4moe) on the GPU against the
// double-precision reference forward (tests/model/ref_ik_families.h): every
// layer on the GPU and only the last one, the prompt in one pass (prefill
// kernels) and one token a pass (decode kernels, graphs), in the exact
// arithmetic with the CPU test's bound (1e-3) and in the fast one with the
// F32 goldens' fast bound (2e-2, golden_families_test.cpp's).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "device_util.h"
#include "model/model.h"
#include "model/ref_ik_families.h"
#include "model_util.h"
#include "runtime/offload.h"

namespace ferrite {
namespace {

constexpr double kExactTol = 1e-3;
constexpr double kFastTol = 2e-2;
constexpr int64_t kCtx = 64;

class GpuIkFamilies : public ::testing::TestWithParam<std::string> {};

TEST_P(GpuIkFamilies, LogitsMatchReference) {
  FERRITE_REQUIRE_GPU();
  const std::string& family = GetParam();
  const auto tiny = test::make_tiny_family(family);
  const test::RefIkFamily ref(family, *tiny);
  std::shared_ptr<const model::Model> model = model::Model::load(tiny->path().string());
  for (int prompt : {1, 2}) {
    const std::vector<int32_t> tokens = test::tiny_family_prompt(prompt);
    const test::ref::Rows expected = ref.logits(tokens);
    cuda::test::check_passes(model, tokens, kCtx, cuda::test::standard_passes(static_cast<int64_t>(tokens.size())),
                             family + " p" + std::to_string(prompt), kExactTol, kFastTol,
                             cuda::test::against_reference(expected));
  }
}

INSTANTIATE_TEST_SUITE_P(Tiny, GpuIkFamilies, ::testing::ValuesIn(test::tiny_ik_families()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string s = info.param;
                           std::replace_if(s.begin(), s.end(), [](char c) { return !std::isalnum(c); }, '_');
                           return s;
                         });

}  // namespace
}  // namespace ferrite
