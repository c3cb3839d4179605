#include "gguf/tensor_type.h"

#include <array>
#include <cctype>

namespace ferrite {
namespace {

// Super-block size of the K-, IQ- and TQ-quants.
constexpr uint32_t kQK_K = 256;
// Block size of the legacy quants (Q4_0 ... Q8_1, IQ4_NL, MXFP4).
constexpr uint32_t kQK = 32;

constexpr std::array<TensorTypeInfo, 32> kTypes = {{
    {TensorType::F32, "f32", 1, 4, false},
    {TensorType::F16, "f16", 1, 2, false},
    {TensorType::Q4_0, "q4_0", kQK, 2 + kQK / 2, true},
    {TensorType::Q4_1, "q4_1", kQK, 4 + kQK / 2, true},
    {TensorType::Q5_0, "q5_0", kQK, 2 + 4 + kQK / 2, true},
    {TensorType::Q5_1, "q5_1", kQK, 4 + 4 + kQK / 2, true},
    {TensorType::Q8_0, "q8_0", kQK, 2 + kQK, true},
    {TensorType::Q8_1, "q8_1", kQK, 4 + kQK, true},
    {TensorType::Q2_K, "q2_K", kQK_K, kQK_K / 16 + kQK_K / 4 + 2 + 2, true},
    {TensorType::Q3_K, "q3_K", kQK_K, kQK_K / 8 + kQK_K / 4 + 12 + 2, true},
    {TensorType::Q4_K, "q4_K", kQK_K, 2 + 2 + 12 + kQK_K / 2, true},
    {TensorType::Q5_K, "q5_K", kQK_K, 2 + 2 + 12 + kQK_K / 8 + kQK_K / 2, true},
    {TensorType::Q6_K, "q6_K", kQK_K, kQK_K / 2 + kQK_K / 4 + kQK_K / 16 + 2, true},
    {TensorType::Q8_K, "q8_K", kQK_K, 4 + kQK_K + kQK_K / 16 * 2, true},
    {TensorType::IQ2_XXS, "iq2_xxs", kQK_K, 2 + kQK_K / 4, true},
    {TensorType::IQ2_XS, "iq2_xs", kQK_K, 2 + kQK_K / 4 + kQK_K / 32, true},
    {TensorType::IQ3_XXS, "iq3_xxs", kQK_K, 2 + 3 * kQK_K / 8, true},
    {TensorType::IQ1_S, "iq1_s", kQK_K, 2 + kQK_K / 8 + kQK_K / 16, true},
    {TensorType::IQ4_NL, "iq4_nl", kQK, 2 + kQK / 2, true},
    {TensorType::IQ3_S, "iq3_s", kQK_K, 2 + kQK_K / 4 + kQK_K / 32 + kQK_K / 8 + kQK_K / 64, true},
    {TensorType::IQ2_S, "iq2_s", kQK_K, 2 + kQK_K / 4 + kQK_K / 32 + kQK_K / 32, true},
    {TensorType::IQ4_XS, "iq4_xs", kQK_K, 2 + 2 + kQK_K / 64 + kQK_K / 2, true},
    {TensorType::I8, "i8", 1, 1, false},
    {TensorType::I16, "i16", 1, 2, false},
    {TensorType::I32, "i32", 1, 4, false},
    {TensorType::I64, "i64", 1, 8, false},
    {TensorType::F64, "f64", 1, 8, false},
    {TensorType::IQ1_M, "iq1_m", kQK_K, kQK_K / 8 + kQK_K / 16 + kQK_K / 32, true},
    {TensorType::BF16, "bf16", 1, 2, false},
    {TensorType::TQ1_0, "tq1_0", kQK_K, (kQK_K - 4 * kQK_K / 64) / 5 + kQK_K / 64 + 2, true},
    {TensorType::TQ2_0, "tq2_0", kQK_K, 2 + kQK_K / 4, true},
    {TensorType::MXFP4, "mxfp4", kQK, 1 + kQK / 2, true},
}};

// Index by raw enum value; -1 marks retired or unknown values.
constexpr uint32_t kMaxRaw = 40;
constexpr std::array<int, kMaxRaw> make_index() {
  std::array<int, kMaxRaw> idx{};
  for (auto& v : idx) v = -1;
  for (size_t i = 0; i < kTypes.size(); ++i) {
    idx[static_cast<uint32_t>(kTypes[i].type)] = static_cast<int>(i);
  }
  return idx;
}
constexpr std::array<int, kMaxRaw> kIndex = make_index();

}  // namespace

const TensorTypeInfo* tensor_type_info(uint32_t raw_type) {
  if (raw_type >= kMaxRaw || kIndex[raw_type] < 0) return nullptr;
  return &kTypes[static_cast<size_t>(kIndex[raw_type])];
}

std::string tensor_type_name(TensorType t) {
  const TensorTypeInfo* info = tensor_type_info(t);
  if (info == nullptr) return "type(" + std::to_string(static_cast<uint32_t>(t)) + ")";
  return info->name;
}

std::optional<TensorType> tensor_type_from_name(std::string_view name) {
  for (const auto& info : kTypes) {
    std::string_view n = info.name;
    if (n.size() != name.size()) continue;
    bool eq = true;
    for (size_t i = 0; i < n.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(n[i])) != std::tolower(static_cast<unsigned char>(name[i]))) {
        eq = false;
        break;
      }
    }
    if (eq) return info.type;
  }
  return std::nullopt;
}

uint64_t tensor_row_bytes(TensorType type, uint64_t n) {
  const TensorTypeInfo* info = tensor_type_info(type);
  return n / info->block_size * info->block_bytes;
}

const TensorTypeInfo* tensor_types_begin() { return kTypes.data(); }
const TensorTypeInfo* tensor_types_end() { return kTypes.data() + kTypes.size(); }

}  // namespace ferrite
