// The parts of a SentencePiece model file (tokenizer.model) that conversion
// needs: its pieces with scores and types, and a few normalizer and trainer
// fields. The file is a protobuf ModelProto; its wire format is read here
// directly (varints and length-delimited fields, every length bounds-checked)
// rather than through libprotobuf and sentencepiece's .proto: the subset is
// four fields deep, and an own reader is small, has no generated code, and is
// fuzzed with the rest of the converter's parsers.
//   ModelProto:      1 pieces (repeated SentencePiece), 2 trainer_spec, 3 normalizer_spec
//   SentencePiece:   1 piece (string), 2 score (float), 3 type (enum, default NORMAL)
//   TrainerSpec:     3 model_type (UNIGRAM 1, BPE 2, WORD 3, CHAR 4), 35 byte_fallback,
//                    40 unk_id, 41 bos_id, 42 eos_id, 43 pad_id
//   NormalizerSpec:  2 precompiled_charsmap (bytes), 3 add_dummy_prefix (default true),
//                    4 remove_extra_whitespaces (default true)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ferrite::convert {

enum class SpmPieceType : int32_t { Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 };

struct SpmPiece {
  std::string piece;
  float score = 0.0f;
  SpmPieceType type = SpmPieceType::Normal;
};

struct SpmModel {
  std::vector<SpmPiece> pieces;
  int32_t model_type = 1;  // UNIGRAM
  bool byte_fallback = false;
  int32_t unk_id = 0, bos_id = 1, eos_id = 2, pad_id = -1;
  bool add_dummy_prefix = true;
  bool remove_extra_whitespaces = true;
  std::string precompiled_charsmap;  // the normalizer's compiled rules (Unigram models); may be empty

  // Parses a ModelProto image; `name` appears in errors. Throws FormatError.
  static SpmModel parse(const uint8_t* data, uint64_t size, const std::string& name);
  static SpmModel read(const std::string& path);
};

// More pieces than this are refused (real vocabularies have at most ~1M).
constexpr size_t kMaxSpmPieces = 1u << 22;

}  // namespace ferrite::convert
