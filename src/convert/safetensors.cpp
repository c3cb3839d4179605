#include "convert/safetensors.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <set>

#include "convert/json_file.h"
#include "core/error.h"
#include "core/fp16.h"

namespace ferrite::convert {
namespace {

constexpr uint64_t kMaxIndexBytes = 64ull << 20;
constexpr int64_t kMaxDim = int64_t{1} << 40;

struct DtypeInfo {
  const char* name;
  uint32_t bytes;
};
constexpr DtypeInfo kDtypes[] = {
    {"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8},     {"I32", 4},     {"I16", 2}, {"I8", 1},
    {"U64", 8}, {"U32", 4}, {"U16", 2}, {"U8", 1},   {"BOOL", 1},    {"F8_E4M3", 1}, {"F8_E5M2", 1},
};

uint32_t dtype_bytes(const std::string& name) {
  for (const DtypeInfo& d : kDtypes) {
    if (name == d.name) return d.bytes;
  }
  return 0;
}

std::string list_names(const std::vector<std::string>& names) {
  std::string out;
  const size_t shown = std::min<size_t>(names.size(), 5);
  for (size_t i = 0; i < shown; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > shown) out += " and " + std::to_string(names.size() - shown) + " more";
  return out;
}

StTensor parse_entry(const std::string& file, uint64_t header_end, uint64_t buffer_size, const std::string& name,
                     const Json& e, const uint8_t* buffer) {
  const std::string field = "tensor " + name;
  auto bad = [&](const std::string& why) { return FormatError(file, 8, field, why); };
  if (!e.is_object()) throw bad("entry is not an object");
  StTensor t;
  t.name = name;
  t.file = file;
  const auto dt = e.find("dtype");
  if (dt == e.end() || !dt->is_string()) throw bad("missing \"dtype\"");
  t.dtype = dt->get<std::string>();
  t.elem_bytes = dtype_bytes(t.dtype);
  if (t.elem_bytes == 0) throw bad("unknown dtype '" + t.dtype + "'");
  const auto shape = e.find("shape");
  if (shape == e.end() || !shape->is_array()) throw bad("missing \"shape\"");
  if (shape->size() > kMaxSafetensorsDims) throw bad("more than " + std::to_string(kMaxSafetensorsDims) + " dimensions");
  for (const Json& d : *shape) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0 || d.get<int64_t>() > kMaxDim) {
      throw bad("shape has an invalid dimension " + d.dump());
    }
    const auto n = d.get<int64_t>();
    t.shape.push_back(n);
    if (n != 0 && t.n_elements > static_cast<uint64_t>(kMaxDim) / static_cast<uint64_t>(n)) {
      throw bad("shape " + shape->dump() + " has too many elements");
    }
    t.n_elements *= static_cast<uint64_t>(n);
  }
  const auto off = e.find("data_offsets");
  if (off == e.end() || !off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
      !(*off)[1].is_number_unsigned()) {
    throw bad("\"data_offsets\" must be two non-negative integers");
  }
  const auto begin = (*off)[0].get<uint64_t>(), end = (*off)[1].get<uint64_t>();
  if (begin > end || end > buffer_size) {
    throw bad("data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + "] lie outside the " +
              std::to_string(buffer_size) + "-byte data buffer");
  }
  t.n_bytes = end - begin;
  if (t.n_bytes != t.n_elements * t.elem_bytes) {
    throw bad("holds " + std::to_string(t.n_bytes) + " bytes but dtype " + t.dtype + " and shape " +
              t.shape_string() + " need " + std::to_string(t.n_elements * t.elem_bytes));
  }
  t.offset = header_end + begin;
  t.data = buffer + begin;
  return t;
}

}  // namespace

bool StTensor::is_float() const { return dtype == "F32" || dtype == "F16" || dtype == "BF16" || dtype == "F64"; }

std::string StTensor::shape_string() const {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

SafetensorsFile SafetensorsFile::parse(const uint8_t* data, uint64_t size, const std::string& name) {
  if (size < 8) throw FormatError(name, 0, "header length", "file ends early (" + std::to_string(size) + " bytes)");
  uint64_t n = 0;
  std::memcpy(&n, data, 8);
  if (n > kMaxSafetensorsHeader) {
    throw FormatError(name, 0, "header length", std::to_string(n) + " bytes is over the 100 MB limit");
  }
  if (n > size - 8) {
    throw FormatError(name, 0, "header length",
                      std::to_string(n) + " bytes run past the end of the file (" + std::to_string(size) + " bytes)");
  }
  const Json header = parse_json(std::string_view(reinterpret_cast<const char*>(data + 8), n), name);
  if (!header.is_object()) throw FormatError(name, 8, "header", "is not a JSON object");

  SafetensorsFile f;
  const uint64_t header_end = 8 + n;
  const uint64_t buffer_size = size - header_end;
  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__") {
      if (!value.is_object()) throw FormatError(name, 8, "__metadata__", "is not an object");
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string()) throw FormatError(name, 8, "__metadata__." + mk, "is not a string");
        f.metadata_[mk] = mv.get<std::string>();
      }
      continue;
    }
    f.tensors_.push_back(parse_entry(name, header_end, buffer_size, key, value, data + header_end));
  }
  // The tensors tile the buffer: sorted by offset, each starts where the
  // previous one ended and the last ends at the end of the file.
  std::vector<const StTensor*> by_offset;
  for (const StTensor& t : f.tensors_) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(), [](const StTensor* a, const StTensor* b) {
    return a->offset != b->offset ? a->offset < b->offset : a->n_bytes < b->n_bytes;
  });
  uint64_t at = header_end;
  const StTensor* prev = nullptr;
  for (const StTensor* t : by_offset) {
    if (t->offset < at) {
      throw FormatError(name, t->offset, "tensor " + t->name, "its data overlaps that of " + prev->name);
    }
    if (t->offset > at) {
      throw FormatError(name, at, "tensor " + t->name,
                        "a gap of " + std::to_string(t->offset - at) + " bytes precedes its data");
    }
    at = t->offset + t->n_bytes;
    prev = t;
  }
  if (at != size) {
    throw FormatError(name, at, "data buffer", std::to_string(size - at) + " bytes after the last tensor belong to none");
  }
  return f;
}

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  auto map = std::make_unique<MappedFile>(path);
  SafetensorsFile f = parse(map->data(), map->size(), path);
  f.map_ = std::move(map);
  return f;
}

Checkpoint Checkpoint::from_file(SafetensorsFile file) {
  Checkpoint c;
  c.parts_.push_back(std::move(file));
  c.files_.push_back(c.parts_.back().tensors().empty() ? "" : c.parts_.back().tensors().front().file);
  c.index();
  return c;
}

Checkpoint Checkpoint::open_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  const fs::path root(dir);
  if (!fs::is_directory(root)) throw IoError(dir, "is not a directory");
  Checkpoint c;
  const fs::path index_path = root / "model.safetensors.index.json";
  // Every model*.safetensors file of the folder (as llama.cpp lists them);
  // the index, when present, must name exactly their tensors.
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(root)) {
    const std::string f = entry.path().filename().string();
    if (f.rfind("model", 0) == 0 && f.size() > 12 && f.ends_with(".safetensors")) names.push_back(f);
  }
  std::sort(names.begin(), names.end());
  Json weight_map;
  if (fs::exists(index_path)) {
    const Json index = read_json_file(index_path.string(), kMaxIndexBytes);
    const Json* wm = json_object(index, "weight_map", index_path.string());
    if (wm == nullptr) throw ModelError(index_path.string() + ": no \"weight_map\"");
    weight_map = *wm;
    for (const auto& [tensor, file] : weight_map.items()) {
      if (!file.is_string()) throw ModelError(index_path.string() + ": weight_map[\"" + tensor + "\"] is not a file name");
      const std::string f = file.get<std::string>();
      if (f.empty() || f.find('/') != std::string::npos || f.find('\\') != std::string::npos || f == "." ||
          f == "..") {
        throw ModelError(index_path.string() + ": weight_map names '" + f + "', which is not a file of the folder");
      }
      if (!fs::exists(root / f)) {
        throw IoError((root / f).string(), "missing: model.safetensors.index.json lists this shard");
      }
    }
  }
  if (names.empty()) {
    const bool bin = fs::exists(root / "pytorch_model.bin") || fs::exists(root / "pytorch_model.bin.index.json");
    throw ModelError(dir + ": no model.safetensors" +
                     std::string(bin ? " (found pytorch_model.bin: only safetensors checkpoints are read)" : ""));
  }
  for (const std::string& f : names) {
    c.parts_.push_back(SafetensorsFile::open((root / f).string()));
    c.files_.push_back((root / f).string());
  }
  c.index();
  if (!weight_map.is_null()) {
    std::vector<std::string> missing, extra;
    for (const auto& [tensor, file] : weight_map.items()) {
      const StTensor* t = c.find(tensor);
      if (t == nullptr || fs::path(t->file).filename() != file.get<std::string>()) missing.push_back(tensor);
    }
    for (const StTensor* t : c.sorted_) {
      if (!weight_map.contains(t->name)) extra.push_back(t->name);
    }
    if (!missing.empty()) {
      throw ModelError(index_path.string() + ": tensors not in the shard it names: " + list_names(missing));
    }
    if (!extra.empty()) {
      throw ModelError(index_path.string() + ": the shards hold tensors it does not list: " + list_names(extra));
    }
  }
  return c;
}

void Checkpoint::index() {
  for (const SafetensorsFile& p : parts_) {
    for (const StTensor& t : p.tensors()) {
      const auto [it, inserted] = by_name_.emplace(t.name, &t);
      if (!inserted) throw ModelError("tensor " + t.name + " is in both " + it->second->file + " and " + t.file);
      sorted_.push_back(&t);
    }
  }
  std::sort(sorted_.begin(), sorted_.end(), [](const StTensor* a, const StTensor* b) { return a->name < b->name; });
}

const StTensor* Checkpoint::find(std::string_view name) const {
  const auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : it->second;
}

void to_f32(const StTensor& t, float* out) {
  const uint8_t* p = t.data;
  const uint64_t n = t.n_elements;
  if (t.dtype == "F32") {
    std::memcpy(out, p, n * 4);
  } else if (t.dtype == "F16" || t.dtype == "BF16") {
    const bool bf = t.dtype == "BF16";
    for (uint64_t i = 0; i < n; ++i) {
      uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      out[i] = bf ? bf16_to_fp32(h) : fp16_to_fp32(h);
    }
  } else if (t.dtype == "F64") {
    for (uint64_t i = 0; i < n; ++i) {
      double d;
      std::memcpy(&d, p + 8 * i, 8);
      out[i] = static_cast<float>(d);
    }
  } else {
    throw ModelError(t.file + ": tensor " + t.name + " has dtype " + t.dtype +
                     "; only F32, F16, BF16 and F64 weights can be converted");
  }
}

}  // namespace ferrite::convert
