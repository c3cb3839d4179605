#include "quant/imatrix.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include "core/error.h"
#include "gguf/file.h"

namespace ferrite::quant {
namespace {

// Refuse names and value counts beyond anything a real model has.
constexpr int32_t kMaxNameLength = 4096;
constexpr int32_t kMaxValues = 1 << 28;
constexpr int32_t kMaxEntries = 1 << 20;

class Reader {
 public:
  Reader(const uint8_t* data, size_t size, const std::string& name) : p_(data), size_(size), name_(name) {}
  bool at_end() const { return pos_ == size_; }
  int32_t i32(const char* field) {
    int32_t v;
    bytes(&v, sizeof(v), field);
    return v;
  }
  void bytes(void* out, size_t n, const char* field) {
    if (n > size_ - pos_) throw FormatError(name_, pos_, field, "file ends early");
    std::memcpy(out, p_ + pos_, n);
    pos_ += n;
  }
  size_t pos() const { return pos_; }
  const std::string& name() const { return name_; }

 private:
  const uint8_t* p_;
  size_t size_;
  size_t pos_ = 0;
  std::string name_;
};

void put_i32(std::vector<uint8_t>& out, int32_t v) {
  const size_t at = out.size();
  out.resize(at + sizeof(v));
  std::memcpy(out.data() + at, &v, sizeof(v));
}

}  // namespace

namespace {

// llama.cpp's GGUF imatrix: "<name>.in_sum2" [cols, n_mat] and
// "<name>.counts" [1, n_mat] per weight; importance = sums / count.
Imatrix parse_gguf(const uint8_t* data, size_t size, const std::string& name) {
  const gguf::File f = gguf::File::parse(data, size, name);
  const gguf::Value* type = f.find("general.type");
  if (type == nullptr || !type->is_string() || type->as_string() != "imatrix") {
    throw FormatError(name, 0, "general.type", "a GGUF file that is not an importance matrix (general.type is not \"imatrix\")");
  }
  Imatrix m;
  if (const gguf::Value* c = f.find("imatrix.chunk_count"); c != nullptr && c->is_integer()) {
    m.last_chunk = static_cast<int32_t>(c->as_uint());
  }
  if (const gguf::Value* d = f.find("imatrix.datasets"); d != nullptr && d->is_array() && d->size() > 0 &&
                                                        d->items()[0].is_string()) {
    m.dataset = d->items()[0].as_string();
  }
  static const std::string kSums = ".in_sum2", kCounts = ".counts";
  for (const gguf::TensorInfo& sums : f.tensors()) {
    if (sums.name.size() <= kSums.size() || sums.name.compare(sums.name.size() - kSums.size(), kSums.size(), kSums) != 0) {
      continue;
    }
    const std::string weight = sums.name.substr(0, sums.name.size() - kSums.size());
    const gguf::TensorInfo* counts = f.find_tensor(weight + kCounts);
    if (counts == nullptr) throw FormatError(name, 0, sums.name, "has no " + weight + kCounts);
    const int64_t cols = sums.ne[0], n_mat = sums.ne[1];
    if (sums.type != TensorType::F32 || counts->type != TensorType::F32 || sums.ne[2] != 1 || sums.ne[3] != 1 ||
        static_cast<int64_t>(counts->n_elements) != n_mat || cols <= 0 || cols > kMaxValues ||
        n_mat > kMaxValues / cols) {
      throw FormatError(name, 0, sums.name, "in_sum2 must be f32 [cols, n_mat] and counts f32 [1, n_mat]");
    }
    ImatrixEntry e;
    e.name = weight;
    e.ncall = 1;
    e.values.resize(static_cast<size_t>(cols * n_mat));
    for (int64_t j = 0; j < n_mat; ++j) {
      float count;
      std::memcpy(&count, counts->data + 4 * j, 4);
      if (!std::isfinite(count) || count < 0.0f) throw FormatError(name, 0, counts->name, "negative or not finite");
      for (int64_t c = 0; c < cols; ++c) {
        float sum;
        std::memcpy(&sum, sums.data + 4 * (j * cols + c), 4);
        if (!std::isfinite(sum) || sum < 0.0f) throw FormatError(name, 0, sums.name, "negative or not finite");
        e.values[static_cast<size_t>(j * cols + c)] = count > 0.0f ? sum / count : 1.0f;
      }
    }
    m.add(std::move(e));
  }
  if (m.entries().empty()) throw FormatError(name, 0, "tensors", "no <name>.in_sum2 entries");
  return m;
}

}  // namespace

Imatrix Imatrix::parse(const uint8_t* data, size_t size, const std::string& name) {
  if (size >= 4 && std::memcmp(data, "GGUF", 4) == 0) return parse_gguf(data, size, name);
  Reader r(data, size, name);
  Imatrix m;
  const int32_t n = r.i32("n_entries");
  if (n < 0 || n > kMaxEntries) throw FormatError(name, 0, "n_entries", "implausible count " + std::to_string(n));
  for (int32_t i = 0; i < n; ++i) {
    ImatrixEntry e;
    const size_t at = r.pos();
    const int32_t len = r.i32("name length");
    if (len <= 0 || len > kMaxNameLength) throw FormatError(name, at, "name length", "implausible " + std::to_string(len));
    e.name.resize(static_cast<size_t>(len));
    r.bytes(e.name.data(), e.name.size(), "name");
    e.ncall = r.i32("ncall");
    const size_t at_n = r.pos();
    const int32_t nval = r.i32("n_values");
    if (nval <= 0 || nval > kMaxValues) {
      throw FormatError(name, at_n, "n_values of " + e.name, "implausible " + std::to_string(nval));
    }
    e.values.resize(static_cast<size_t>(nval));
    r.bytes(e.values.data(), e.values.size() * sizeof(float), "values");
    for (float v : e.values) {
      if (!std::isfinite(v) || v < 0.0f) throw FormatError(name, at_n, "values of " + e.name, "negative or not finite");
    }
    m.add(std::move(e));
  }
  if (!r.at_end()) {
    m.last_chunk = r.i32("last_chunk");
    const size_t at = r.pos();
    const int32_t len = r.i32("dataset length");
    if (len < 0 || len > kMaxNameLength) throw FormatError(name, at, "dataset length", "implausible " + std::to_string(len));
    m.dataset.resize(static_cast<size_t>(len));
    r.bytes(m.dataset.data(), m.dataset.size(), "dataset");
  }
  return m;
}

Imatrix Imatrix::read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(path, "cannot open importance matrix");
  std::vector<uint8_t> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw IoError(path, "read failed");
  return parse(data.data(), data.size(), path);
}

std::vector<uint8_t> Imatrix::to_bytes() const {
  std::vector<uint8_t> out;
  put_i32(out, static_cast<int32_t>(entries_.size()));
  for (const auto& e : entries_) {
    put_i32(out, static_cast<int32_t>(e.name.size()));
    out.insert(out.end(), e.name.begin(), e.name.end());
    put_i32(out, e.ncall);
    put_i32(out, static_cast<int32_t>(e.values.size()));
    const auto* b = reinterpret_cast<const uint8_t*>(e.values.data());
    out.insert(out.end(), b, b + e.values.size() * sizeof(float));
  }
  put_i32(out, last_chunk);
  put_i32(out, static_cast<int32_t>(dataset.size()));
  out.insert(out.end(), dataset.begin(), dataset.end());
  return out;
}

void Imatrix::write(const std::string& path) const {
  const std::vector<uint8_t> bytes = to_bytes();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) throw IoError(path, "cannot create: " + std::string(std::strerror(errno)));
  const size_t written = std::fwrite(bytes.data(), 1, bytes.size(), f);
  const bool ok = written == bytes.size() && std::fclose(f) == 0;
  if (!ok) throw IoError(path, "write failed");
}

void Imatrix::add(ImatrixEntry e) {
  std::vector<float> norm = e.values;
  if (e.ncall > 0) {
    for (float& v : norm) v /= static_cast<float>(e.ncall);
  }
  const auto it = index_.find(e.name);
  if (it != index_.end()) {
    entries_[it->second] = std::move(e);
    normalized_[it->second] = std::move(norm);
    return;
  }
  index_.emplace(e.name, entries_.size());
  entries_.push_back(std::move(e));
  normalized_.push_back(std::move(norm));
}

const std::vector<float>* Imatrix::importance(const std::string& name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &normalized_[it->second];
}

}  // namespace ferrite::quant
