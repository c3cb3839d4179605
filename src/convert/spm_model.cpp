#include "convert/spm_model.h"

#include <cstring>

#include "core/error.h"
#include "core/mapped_file.h"

namespace ferrite::convert {
namespace {

// Protobuf wire types.
constexpr uint32_t kVarint = 0, kFixed64 = 1, kBytes = 2, kFixed32 = 5;

class Reader {
 public:
  Reader(const uint8_t* p, uint64_t n, uint64_t base, const std::string& name, const char* what)
      : p_(p), n_(n), base_(base), name_(name), what_(what) {}
  bool done() const { return pos_ == n_; }
  uint64_t offset() const { return base_ + pos_; }

  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ == n_) fail("a varint runs past the end");
      const uint8_t b = p_[pos_++];
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    fail("a varint is longer than 10 bytes");
  }
  // A length-delimited field's bytes.
  Reader sub(const char* what) {
    const uint64_t len = varint();
    if (len > n_ - pos_) fail("a field of " + std::to_string(len) + " bytes runs past the end");
    Reader r(p_ + pos_, len, base_ + pos_, name_, what);
    pos_ += len;
    return r;
  }
  uint32_t fixed32() {
    if (n_ - pos_ < 4) fail("a 32-bit field runs past the end");
    uint32_t v;
    std::memcpy(&v, p_ + pos_, 4);
    pos_ += 4;
    return v;
  }
  std::string rest() const { return std::string(reinterpret_cast<const char*>(p_), n_); }
  void skip(uint32_t wire) {
    switch (wire) {
      case kVarint: (void)varint(); break;
      case kFixed64:
        if (n_ - pos_ < 8) fail("a 64-bit field runs past the end");
        pos_ += 8;
        break;
      case kBytes: (void)sub(what_); break;
      case kFixed32: (void)fixed32(); break;
      default: fail("unsupported wire type " + std::to_string(wire));
    }
  }
  [[noreturn]] void fail(const std::string& why) const { throw FormatError(name_, base_ + pos_, what_, why); }

 private:
  const uint8_t* p_;
  uint64_t n_;
  uint64_t base_;
  uint64_t pos_ = 0;
  const std::string& name_;
  const char* what_;
};

SpmPiece parse_piece(Reader r) {
  SpmPiece piece;
  while (!r.done()) {
    const uint64_t key = r.varint();
    const uint32_t field = static_cast<uint32_t>(key >> 3), wire = static_cast<uint32_t>(key & 7);
    if (field == 1 && wire == kBytes) {
      piece.piece = r.sub("piece").rest();
    } else if (field == 2 && wire == kFixed32) {
      const uint32_t bits = r.fixed32();
      std::memcpy(&piece.score, &bits, 4);
    } else if (field == 3 && wire == kVarint) {
      const uint64_t t = r.varint();
      if (t < 1 || t > 6) r.fail("unknown piece type " + std::to_string(t));
      piece.type = static_cast<SpmPieceType>(t);
    } else {
      r.skip(wire);
    }
  }
  return piece;
}

int32_t as_int32(uint64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(v)); }

}  // namespace

SpmModel SpmModel::parse(const uint8_t* data, uint64_t size, const std::string& name) {
  SpmModel m;
  Reader r(data, size, 0, name, "ModelProto");
  while (!r.done()) {
    const uint64_t key = r.varint();
    const uint32_t field = static_cast<uint32_t>(key >> 3), wire = static_cast<uint32_t>(key & 7);
    if (field == 1 && wire == kBytes) {
      if (m.pieces.size() >= kMaxSpmPieces) r.fail("more than " + std::to_string(kMaxSpmPieces) + " pieces");
      m.pieces.push_back(parse_piece(r.sub("SentencePiece")));
    } else if (field == 2 && wire == kBytes) {
      Reader t = r.sub("TrainerSpec");
      while (!t.done()) {
        const uint64_t k = t.varint();
        const uint32_t f = static_cast<uint32_t>(k >> 3), w = static_cast<uint32_t>(k & 7);
        if (w != kVarint) {
          t.skip(w);
          continue;
        }
        const uint64_t v = t.varint();
        if (f == 3) m.model_type = as_int32(v);
        if (f == 35) m.byte_fallback = v != 0;
        if (f == 40) m.unk_id = as_int32(v);
        if (f == 41) m.bos_id = as_int32(v);
        if (f == 42) m.eos_id = as_int32(v);
        if (f == 43) m.pad_id = as_int32(v);
      }
    } else if (field == 3 && wire == kBytes) {
      Reader n = r.sub("NormalizerSpec");
      while (!n.done()) {
        const uint64_t k = n.varint();
        const uint32_t f = static_cast<uint32_t>(k >> 3), w = static_cast<uint32_t>(k & 7);
        if (f == 2 && w == kBytes) {
          m.precompiled_charsmap = n.sub("precompiled_charsmap").rest();
          continue;
        }
        if (w != kVarint) {
          n.skip(w);
          continue;
        }
        const uint64_t v = n.varint();
        if (f == 3) m.add_dummy_prefix = v != 0;
        if (f == 4) m.remove_extra_whitespaces = v != 0;
      }
    } else {
      r.skip(wire);
    }
  }
  if (m.pieces.empty()) throw FormatError(name, 0, "ModelProto", "no pieces (not a SentencePiece model)");
  return m;
}

SpmModel SpmModel::read(const std::string& path) {
  const MappedFile f(path);
  return parse(f.data(), f.size(), path);
}

}  // namespace ferrite::convert
