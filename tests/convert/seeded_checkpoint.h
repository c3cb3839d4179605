// The converter's checkpoint fixtures (tests/convert/fixtures) keep no
// weights. A folder's weights.json lists the tensors of its safetensors file
// (name, dtype, shape) with the mean and half-width of a uniform
// distribution and a seed; scripts/seeded_fixtures.py made transformers'
// outputs (logits.f32, reference.json) from the weights that this
// generator, written there again in numpy, gives. `seeded_fixture` writes a
// usable copy of a folder: its files and the safetensors file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/fp16.h"
#include "hf_dir.h"
#include "support/temp_dir.h"
#include "support/test_data.h"

namespace ferrite::test {

// SplitMix64's output function (Steele, Lea and Flood, 2014).
inline uint64_t splitmix64_mix(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Element i of tensor `tensor` under `seed`: SplitMix64 at state
// (seed + (tensor << 40) + i + 1) * golden ratio, its top 24 bits as
// v in [-1, 1), then mean + half * v in double (the product is exact, so
// fused or not it rounds once) rounded to float.
inline std::vector<float> seeded_uniform(uint64_t seed, uint64_t tensor, size_t n, float mean, float half) {
  constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;
  std::vector<float> out(n);
  const uint64_t base = seed + (tensor << 40) + 1;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t z = splitmix64_mix((base + i) * kGolden);
    const double v = static_cast<double>(z >> 40) * 0x1p-23 - 1.0;
    out[i] = static_cast<float>(static_cast<double>(mean) + static_cast<double>(half) * v);
  }
  return out;
}

// The safetensors bytes that `weights` (a parsed weights.json) describes.
inline std::string seeded_safetensors(const Json& weights) {
  const auto seed = weights.at("seed").get<uint64_t>();
  std::vector<StEntry> entries;
  uint64_t t = 0;
  for (const Json& e : weights.at("tensors")) {
    const auto shape = e.at("shape").get<std::vector<int64_t>>();
    size_t n = 1;
    for (int64_t d : shape) n *= static_cast<size_t>(d);
    const std::vector<float> v = seeded_uniform(seed, t++, n, e.at("mean").get<float>(), e.at("half").get<float>());
    const auto dtype = e.at("dtype").get<std::string>();
    if (dtype == "F32") {
      entries.push_back(st_f32(e.at("name").get<std::string>(), shape, v));
    } else if (dtype == "BF16") {
      std::string b(n * 2, '\0');
      for (size_t i = 0; i < n; ++i) {
        const uint16_t h = fp32_to_bf16(v[i]);
        std::memcpy(b.data() + 2 * i, &h, 2);
      }
      entries.push_back(StEntry{e.at("name").get<std::string>(), "BF16", shape, std::move(b)});
    } else {
      throw std::runtime_error("weights.json: dtype " + dtype + " is not generated");
    }
  }
  return safetensors_bytes(entries, Json{{"format", "pt"}});
}

inline std::filesystem::path fixture_source(const std::string& rel) {
  return std::filesystem::path(FERRITE_SOURCE_DIR) / "tests/convert/fixtures" / rel;
}

// A copy of fixtures/<rel> in `into` (under the folder's own name) with its
// safetensors file written from weights.json; weights.json itself stays out.
inline std::filesystem::path seeded_fixture(const std::string& rel, const TempDir& into) {
  const std::filesystem::path src = fixture_source(rel);
  const std::filesystem::path dst = into.path() / src.filename();
  std::filesystem::create_directories(dst);
  for (const auto& e : std::filesystem::directory_iterator(src)) {
    if (e.path().filename() != "weights.json") std::filesystem::copy_file(e.path(), dst / e.path().filename());
  }
  const Json weights = Json::parse(read_file(src / "weights.json"));
  write_bytes((dst / weights.at("file").get<std::string>()).string(), seeded_safetensors(weights));
  return dst;
}

}  // namespace ferrite::test
