// The dispatch cap (FERRITE_ISA, `ferrite bench --isa`): names, clamping to
// the host, and the kernel level each cap runs.
#include <gtest/gtest.h>

#include "core/error.h"
#include "cpu/features.h"
#include "cpu/packed/packed_matmul.h"
#include "quant/type_traits.h"

namespace ferrite::cpu {
namespace {

// Restores the cap in effect when it goes out of scope.
class CapGuard {
 public:
  CapGuard() : saved_(active_isa_cap()) {}
  ~CapGuard() { set_isa_cap(saved_); }
  CapGuard(const CapGuard&) = delete;
  CapGuard& operator=(const CapGuard&) = delete;

 private:
  IsaCap saved_;
};

constexpr IsaCap kX86[] = {IsaCap::Scalar, IsaCap::Avx2, IsaCap::Avx512, IsaCap::Avx512Vnni, IsaCap::Amx};

TEST(IsaCap, NamesRoundTripAndUnknownNamesAreRefused) {
  for (IsaCap c : kX86) EXPECT_EQ(parse_isa_cap(isa_cap_name(c)), c);
  EXPECT_EQ(parse_isa_cap("neon"), IsaCap::Neon);
  EXPECT_EQ(parse_isa_cap("neon_i8mm"), IsaCap::NeonI8mm);
  EXPECT_THROW(parse_isa_cap("avx3"), InvalidArgument);
  EXPECT_THROW(parse_isa_cap(""), InvalidArgument);
  EXPECT_THROW(parse_isa_cap("AVX2"), InvalidArgument);
  try {
    parse_isa_cap("sse4");
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("avx512vnni"), std::string::npos) << e.what();
  }
}

TEST(IsaCap, KernelLevelOfEachCap) {
  EXPECT_EQ(isa_of_cap(IsaCap::Scalar), Isa::Scalar);
  EXPECT_EQ(isa_of_cap(IsaCap::Avx2), Isa::Avx2);
  EXPECT_EQ(isa_of_cap(IsaCap::Avx512), Isa::Avx2);  // no kernels of AVX-512 without VNNI
  EXPECT_EQ(isa_of_cap(IsaCap::Avx512Vnni), Isa::Avx512);
  EXPECT_EQ(isa_of_cap(IsaCap::Amx), Isa::Avx512);
  EXPECT_EQ(isa_of_cap(IsaCap::Neon), Isa::Neon);
  EXPECT_EQ(isa_of_cap(IsaCap::NeonI8mm), Isa::NeonI8mm);
}

TEST(IsaCap, ClampedToTheHost) {
  const CapGuard guard;
  const IsaCap host = host_isa_cap();
  EXPECT_EQ(detected_isa(), isa_of_cap(host));
  EXPECT_EQ(set_isa_cap(IsaCap::Scalar), IsaCap::Scalar);
  EXPECT_EQ(active_isa(), Isa::Scalar);
  EXPECT_FALSE(amx_available());
  if (host == IsaCap::Neon || host == IsaCap::NeonI8mm) {
    EXPECT_EQ(set_isa_cap(IsaCap::Amx), IsaCap::Scalar);  // the other architecture
    EXPECT_EQ(set_isa_cap(IsaCap::Neon), IsaCap::Neon);
    EXPECT_EQ(active_isa(), Isa::Neon);
    // neon_i8mm is clamped to plain neon where the CPU lacks the int8 matrix multiply.
    EXPECT_EQ(set_isa_cap(IsaCap::NeonI8mm), host);
    EXPECT_EQ(active_isa(), isa_of_cap(host));
    return;
  }
  EXPECT_EQ(set_isa_cap(IsaCap::Neon), IsaCap::Scalar);
  EXPECT_EQ(set_isa_cap(IsaCap::NeonI8mm), IsaCap::Scalar);
  for (IsaCap c : kX86) {
    const IsaCap expect = static_cast<int>(c) <= static_cast<int>(host) ? c : host;
    EXPECT_EQ(set_isa_cap(c), expect) << isa_cap_name(c);
    EXPECT_EQ(active_isa_cap(), expect);
    EXPECT_EQ(active_isa(), isa_of_cap(expect));
    if (expect != IsaCap::Amx) {
      EXPECT_FALSE(amx_available()) << isa_cap_name(c);  // only the amx cap lets AMX run
    }
  }
  // set_isa(Avx512) is the highest cap with those kernels: AMX stays allowed.
  set_isa(Isa::Avx512);
  EXPECT_EQ(active_isa_cap(), host);
}

// The dequantizers of src/quant (their own x86 kernels) follow the cap: a
// capped run uses no instruction above its level anywhere.
TEST(IsaCap, DequantizersFollowTheCap) {
  const CapGuard guard;
  const quant::TypeTraits& q4 = quant::type_traits(TensorType::Q4_K);  // has AVX2 and AVX-512 dequantizers
  set_isa_cap(IsaCap::Scalar);
  EXPECT_STREQ(quant::dequant_isa(), "ref");
  EXPECT_EQ(quant::type_traits(TensorType::Q4_K).to_float, q4.to_float_ref);
  const IsaCap host = host_isa_cap();
  if (host == IsaCap::Scalar || host == IsaCap::Neon || host == IsaCap::NeonI8mm) return;
  set_isa_cap(IsaCap::Avx2);
  EXPECT_STREQ(quant::dequant_isa(), "avx2");
  EXPECT_STREQ(quant::type_traits(TensorType::Q4_K).to_float_isa, "avx2");
  if (set_isa_cap(IsaCap::Avx512) == IsaCap::Avx512) {
    EXPECT_STREQ(quant::dequant_isa(), "avx512");
    EXPECT_STREQ(quant::type_traits(TensorType::Q4_K).to_float_isa, "avx512");
  }
}

TEST(IsaCap, SummaryNamesTheCapAndTheHost) {
  const CapGuard guard;
  set_isa_cap(IsaCap::Scalar);
  EXPECT_EQ(isa_summary(), "scalar (host " + isa_cap_name(host_isa_cap()) + ")");
  const IsaCap host = host_isa_cap();
  if (host == IsaCap::Neon || host == IsaCap::NeonI8mm) {
    set_isa_cap(IsaCap::Neon);
    EXPECT_EQ(isa_summary(), "neon (host " + isa_cap_name(host) + ")");
    return;
  }
  if (host == IsaCap::Scalar) return;
  set_isa_cap(IsaCap::Avx2);
  EXPECT_EQ(isa_summary(), "avx2 (host " + isa_cap_name(host_isa_cap()) + ")");
  if (set_isa_cap(IsaCap::Avx512) == IsaCap::Avx512) {
    EXPECT_EQ(isa_summary(), "avx512 (avx2 kernels; host " + isa_cap_name(host_isa_cap()) + ")");
  }
}

}  // namespace
}  // namespace ferrite::cpu
