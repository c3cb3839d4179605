#include "gguf/writer.h"

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.h"

namespace ferrite::gguf {
namespace {

constexpr uint32_t kVersion = 3;

class ByteSink {
 public:
  explicit ByteSink(std::vector<uint8_t>& out) : out_(out) {}
  template <typename T>
  void put(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    out_.insert(out_.end(), p, p + sizeof(T));
  }
  void put_string(const std::string& s) {
    put<uint64_t>(s.size());
    out_.insert(out_.end(), s.begin(), s.end());
  }
  void put_value(const Value& v) {
    switch (v.type()) {
      case ValueType::UINT8: put<uint8_t>(static_cast<uint8_t>(v.as_uint())); break;
      case ValueType::INT8: put<int8_t>(static_cast<int8_t>(v.as_int())); break;
      case ValueType::UINT16: put<uint16_t>(static_cast<uint16_t>(v.as_uint())); break;
      case ValueType::INT16: put<int16_t>(static_cast<int16_t>(v.as_int())); break;
      case ValueType::UINT32: put<uint32_t>(static_cast<uint32_t>(v.as_uint())); break;
      case ValueType::INT32: put<int32_t>(static_cast<int32_t>(v.as_int())); break;
      case ValueType::UINT64: put<uint64_t>(v.as_uint()); break;
      case ValueType::INT64: put<int64_t>(v.as_int()); break;
      case ValueType::FLOAT32: put<float>(v.as_float()); break;
      case ValueType::FLOAT64: put<double>(v.as_double()); break;
      case ValueType::BOOL: put<uint8_t>(v.as_bool() ? 1 : 0); break;
      case ValueType::STRING: put_string(v.as_string()); break;
      case ValueType::ARRAY:
        put<uint32_t>(static_cast<uint32_t>(v.array_type()));
        put<uint64_t>(v.items().size());
        for (const auto& item : v.items()) put_value(item);
        break;
    }
  }

 private:
  std::vector<uint8_t>& out_;
};

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

}  // namespace

Writer::~Writer() {
  if (out_ != nullptr) {
    std::fclose(out_);
    std::error_code ec;
    std::filesystem::remove(path_ + ".tmp", ec);
  }
}

void Writer::set(const std::string& key, Value value) {
  if (key == "general.alignment") {
    if (value.type() != ValueType::UINT32 || value.as_uint() == 0 || (value.as_uint() & (value.as_uint() - 1))) {
      throw InvalidArgument("general.alignment must be a u32 power of two");
    }
  }
  for (auto& kv : kvs_) {
    if (kv.key == key) {
      kv.value = std::move(value);
      return;
    }
  }
  kvs_.push_back({key, std::move(value)});
}

void Writer::remove(const std::string& key) {
  std::erase_if(kvs_, [&](const KeyValue& kv) { return kv.key == key; });
}

void Writer::copy_metadata(const File& file) {
  for (const auto& kv : file.metadata()) set(kv.key, kv.value);
}

uint32_t Writer::alignment() const {
  for (const auto& kv : kvs_) {
    if (kv.key == "general.alignment") return static_cast<uint32_t>(kv.value.as_uint());
  }
  return kDefaultAlignment;
}

void Writer::add_tensor(const std::string& name, TensorType type, const std::vector<int64_t>& ne) {
  if (out_ != nullptr) throw InvalidArgument("gguf writer: tensor '" + name + "' added after open()");
  const TensorTypeInfo* info = tensor_type_info(type);
  if (info == nullptr) throw InvalidArgument("gguf writer: tensor '" + name + "' has an unknown type");
  if (ne.empty() || ne.size() > kMaxDims) {
    throw InvalidArgument("gguf writer: tensor '" + name + "' must have 1 to 4 dimensions");
  }
  for (const auto& t : tensors_) {
    if (t.name == name) throw InvalidArgument("gguf writer: duplicate tensor '" + name + "'");
  }
  uint64_t n = 1;
  for (int64_t d : ne) {
    if (d < 0 || __builtin_mul_overflow(n, static_cast<uint64_t>(d), &n)) {
      throw InvalidArgument("gguf writer: tensor '" + name + "' has an invalid shape");
    }
  }
  if (ne[0] % info->block_size != 0) {
    throw InvalidArgument("gguf writer: tensor '" + name + "' row of " + std::to_string(ne[0]) +
                          " is not a multiple of the " + info->name + " block size");
  }
  const uint64_t bytes = n / info->block_size * info->block_bytes;
  uint64_t offset = 0;
  if (!tensors_.empty()) {
    offset = align_up(tensors_.back().offset + tensors_.back().n_bytes, alignment());
  }
  tensors_.push_back({name, type, ne, bytes, offset});
}

std::vector<uint8_t> Writer::header_bytes() const {
  // Reserving up front also keeps GCC 12's -Wstringop-overflow from a false
  // positive on the first insert into an empty vector.
  constexpr size_t kHeaderReserve = 1 << 16;
  std::vector<uint8_t> out;
  out.reserve(kHeaderReserve);
  ByteSink s(out);
  s.put<uint32_t>(kMagic);
  s.put<uint32_t>(kVersion);
  s.put<uint64_t>(tensors_.size());
  s.put<uint64_t>(kvs_.size());
  for (const auto& kv : kvs_) {
    s.put_string(kv.key);
    s.put<uint32_t>(static_cast<uint32_t>(kv.value.type()));
    s.put_value(kv.value);
  }
  // Offsets depend on the alignment, which may have been set after the
  // tensors were declared: recompute them here.
  const uint32_t a = alignment();
  uint64_t offset = 0;
  for (const auto& t : tensors_) {
    s.put_string(t.name);
    s.put<uint32_t>(static_cast<uint32_t>(t.ne.size()));
    for (int64_t d : t.ne) s.put<uint64_t>(static_cast<uint64_t>(d));
    s.put<uint32_t>(static_cast<uint32_t>(t.type));
    s.put<uint64_t>(offset);
    offset = align_up(offset + t.n_bytes, a);
  }
  out.resize(align_up(out.size(), a), 0);
  return out;
}

void Writer::open(const std::string& path) {
  if (out_ != nullptr) throw InvalidArgument("gguf writer: already open");
  // Recompute offsets with the final alignment.
  const uint32_t a = alignment();
  uint64_t offset = 0;
  for (auto& t : tensors_) {
    t.offset = offset;
    offset = align_up(offset + t.n_bytes, a);
  }
  path_ = path;
  const std::string tmp = path + ".tmp";
  out_ = std::fopen(tmp.c_str(), "wb");
  if (out_ == nullptr) throw IoError(tmp, std::string("cannot create: ") + std::strerror(errno));
  const std::vector<uint8_t> header = header_bytes();
  if (std::fwrite(header.data(), 1, header.size(), out_) != header.size()) {
    throw IoError(tmp, std::string("write failed: ") + std::strerror(errno));
  }
  current_ = 0;
  current_written_ = 0;
}

void Writer::pad_to_alignment(uint64_t written) {
  const uint64_t pad = align_up(written, alignment()) - written;
  static const uint8_t kZeros[256] = {};
  uint64_t left = pad;
  while (left > 0) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(left, sizeof(kZeros)));
    if (std::fwrite(kZeros, 1, n, out_) != n) {
      throw IoError(path_ + ".tmp", std::string("write failed: ") + std::strerror(errno));
    }
    left -= n;
  }
}

void Writer::write_tensor_data(const void* data, uint64_t n) {
  if (out_ == nullptr) throw InvalidArgument("gguf writer: write_tensor_data before open()");
  const auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    if (current_ >= tensors_.size()) throw InvalidArgument("gguf writer: more tensor data than declared");
    const PendingTensor& t = tensors_[current_];
    const uint64_t take = std::min(n, t.n_bytes - current_written_);
    if (take > 0 && std::fwrite(p, 1, static_cast<size_t>(take), out_) != take) {
      throw IoError(path_ + ".tmp", std::string("write failed: ") + std::strerror(errno));
    }
    p += take;
    n -= take;
    current_written_ += take;
    if (current_written_ == t.n_bytes) {
      // Pad between tensors; the last tensor is padded too, as ggml does.
      pad_to_alignment(t.n_bytes);
      ++current_;
      current_written_ = 0;
    }
  }
}

void Writer::close() {
  if (out_ == nullptr) throw InvalidArgument("gguf writer: close() before open()");
  // Zero-byte tensors complete without any write call.
  while (current_ < tensors_.size() && tensors_[current_].n_bytes == 0) ++current_;
  if (current_ != tensors_.size()) {
    throw InvalidArgument("gguf writer: tensor '" + tensors_[current_].name + "' was not written in full");
  }
  const std::string tmp = path_ + ".tmp";
  const bool flushed = std::fflush(out_) == 0;
  const bool closed = std::fclose(out_) == 0;
  out_ = nullptr;
  if (!flushed || !closed) throw IoError(tmp, "write failed while closing");
  std::error_code ec;
  std::filesystem::rename(tmp, path_, ec);
  if (ec) throw IoError(path_, "cannot rename the finished file into place: " + ec.message());
}

std::vector<uint8_t> Writer::to_bytes(const std::vector<std::vector<uint8_t>>& tensor_data) {
  if (tensor_data.size() != tensors_.size()) {
    throw InvalidArgument("gguf writer: " + std::to_string(tensor_data.size()) + " data blobs for " +
                          std::to_string(tensors_.size()) + " tensors");
  }
  std::vector<uint8_t> out = header_bytes();
  const uint32_t a = alignment();
  for (size_t i = 0; i < tensors_.size(); ++i) {
    if (tensor_data[i].size() != tensors_[i].n_bytes) {
      throw InvalidArgument("gguf writer: tensor '" + tensors_[i].name + "' data has the wrong size");
    }
    out.insert(out.end(), tensor_data[i].begin(), tensor_data[i].end());
    out.resize(align_up(out.size(), a), 0);
  }
  return out;
}

}  // namespace ferrite::gguf
