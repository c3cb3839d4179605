// Writing Hugging Face checkpoint folders for the converter's tests (in a
// test::TempDir): safetensors files written
// from their format's description, JSON files, and SentencePiece
// tokenizer.model files in protobuf wire format.
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/temp_dir.h"

namespace ferrite::test {

using Json = nlohmann::json;

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

inline void write_json(const std::string& path, const Json& j) { write_bytes(path, j.dump(1)); }

// One tensor of a safetensors file: raw little-endian bytes.
struct StEntry {
  std::string name;
  std::string dtype;             // "F32", "F16", "BF16", ...
  std::vector<int64_t> shape;    // outermost first
  std::string bytes;
};

inline StEntry st_f32(const std::string& name, std::vector<int64_t> shape, const std::vector<float>& v) {
  std::string b(v.size() * 4, '\0');
  std::memcpy(b.data(), v.data(), b.size());
  return StEntry{name, "F32", std::move(shape), std::move(b)};
}

// u64 header length, the JSON header, then the tensors back to back.
inline std::string safetensors_bytes(const std::vector<StEntry>& entries, const Json& metadata = Json()) {
  Json header = Json::object();
  if (!metadata.is_null()) header["__metadata__"] = metadata;
  uint64_t at = 0;
  std::string data;
  for (const StEntry& e : entries) {
    header[e.name] = {{"dtype", e.dtype}, {"shape", e.shape}, {"data_offsets", {at, at + e.bytes.size()}}};
    at += e.bytes.size();
    data += e.bytes;
  }
  std::string h = header.dump();
  while ((8 + h.size()) % 8 != 0) h += ' ';
  std::string out(8, '\0');
  const uint64_t n = h.size();
  std::memcpy(out.data(), &n, 8);
  return out + h + data;
}

// Protobuf wire format pieces (spm_model.h lists the fields).
inline std::string pb_varint(uint64_t v) {
  std::string s;
  do {
    uint8_t b = v & 0x7f;
    v >>= 7;
    if (v) b |= 0x80;
    s += static_cast<char>(b);
  } while (v);
  return s;
}
inline std::string pb_bytes(uint32_t field, const std::string& b) { return pb_varint(field << 3 | 2) + pb_varint(b.size()) + b; }
inline std::string pb_uint(uint32_t field, uint64_t v) { return pb_varint(field << 3 | 0) + pb_varint(v); }
inline std::string pb_float(uint32_t field, float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  std::string s = pb_varint(field << 3 | 5);
  for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
  return s;
}

struct SpmPieceSpec {
  std::string piece;
  float score;
  int type;  // 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte
};

inline std::string spm_model_bytes(const std::vector<SpmPieceSpec>& pieces, bool add_dummy_prefix = true) {
  std::string out;
  for (const SpmPieceSpec& p : pieces) {
    std::string m = pb_bytes(1, p.piece) + pb_float(2, p.score);
    if (p.type != 1) m += pb_uint(3, static_cast<uint64_t>(p.type));
    out += pb_bytes(1, m);
  }
  out += pb_bytes(2, pb_uint(3, 2) + pb_uint(35, 1) + pb_uint(40, 0) + pb_uint(41, 1) + pb_uint(42, 2));
  out += pb_bytes(3, pb_uint(3, add_dummy_prefix ? 1 : 0) + pb_uint(4, 0));
  return out;
}

// A byte-level BPE tokenizer.json of its own: the 256 bytes as GPT-2 spells
// them, two merges ("\u0120t", "he") and an <|endoftext|> control token (259 ids).
inline Json toy_bpe_tokenizer_json() {
  Json vocab = Json::object();
  int id = 0, extra = 0;
  for (int b = 0; b < 256; ++b) {
    const bool plain = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
    const uint32_t cp = plain ? static_cast<uint32_t>(b) : 256u + static_cast<uint32_t>(extra++);
    std::string s;
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else {
      s += static_cast<char>(0xc0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3f));
    }
    vocab[s] = id++;
  }
  vocab["\xc4\xa0t"] = id++;
  vocab["he"] = id++;
  Json added = Json::array();
  added.push_back({{"id", id}, {"content", "<|endoftext|>"}, {"special", true}});
  return {{"version", "1.0"},
          {"added_tokens", added},
          {"pre_tokenizer", {{"type", "ByteLevel"}}},
          {"post_processor", nullptr},
          {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"\xc4\xa0 t", "h e"}}}}};
}

}  // namespace ferrite::test
