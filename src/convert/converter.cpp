#include "convert/converter.h"

#include <algorithm>
#include <filesystem>

#include "convert/safetensors.h"
#include "core/error.h"
#include "gguf/writer.h"
#include "quant/type_traits.h"

namespace ferrite::convert {
namespace {

constexpr uint32_t kQuantizationVersion = 2;  // llama.cpp's GGML_QUANT_VERSION

std::string class_of(const HfFiles& f) {
  const auto it = f.config.find("architectures");
  if (it == f.config.end() || !it->is_array() || it->empty() || !(*it)[0].is_string()) {
    throw ModelError(f.path("config.json") + ": no \"architectures\" list naming the model class");
  }
  return (*it)[0].get<std::string>();
}

const PlannedTensor* find_planned(const std::vector<PlannedTensor>& ts, const std::string& name) {
  for (const PlannedTensor& t : ts) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

}  // namespace

uint32_t file_type_of(TensorType outtype) {
  switch (outtype) {
    case TensorType::F32: return 0;
    case TensorType::F16: return 1;
    case TensorType::Q8_0: return 7;
    case TensorType::BF16: return 32;
    default: throw InvalidArgument("output type " + tensor_type_name(outtype) + " is not one of f32, f16, bf16, q8_0");
  }
}

namespace {

ConvertPlan plan_checked(const HfFiles& files, const Checkpoint& ckpt, const ConvertOptions& opt) {
  ConvertPlan plan;
  const uint32_t file_type = file_type_of(opt.outtype);
  plan.hf_class = class_of(files);
  plan.arch = find_arch(plan.hf_class);
  if (plan.arch == nullptr) {
    std::string list;
    for (const std::string& c : supported_classes()) list += (list.empty() ? "" : ", ") + c;
    throw ModelError(files.path("config.json") + ": architecture " + plan.hf_class +
                     " is not supported by ferrite convert (supported: " + list + ")");
  }
  const ArchDef& arch = *plan.arch;
  Params p(files, arch.gguf_arch);
  arch.params(p);
  const int64_t vocab_size = p.opt_int({"vocab_size"}).value_or(-1);
  VocabKeys vocab = arch.vocab(files, vocab_size, opt.vocab);
  if (p.dims.vocab == 0) p.dims.vocab = vocab.n_tokens;
  std::vector<ExtraTensor> extra = arch.extra ? arch.extra(p) : std::vector<ExtraTensor>{};
  plan.tensors = plan_tensors(arch, ckpt, p, std::move(extra), opt.outtype);
  if (const PlannedTensor* embd = find_planned(plan.tensors, "token_embd.weight")) {
    if (embd->shape.front() != vocab.n_tokens) {
      throw ModelError(files.dir + ": the embedding table has " + std::to_string(embd->shape.front()) +
                       " rows but the tokenizer " + std::to_string(vocab.n_tokens) + " tokens");
    }
  }

  auto set = [&](const std::string& key, gguf::Value v) { plan.kvs.push_back(gguf::KeyValue{key, std::move(v)}); };
  set("general.architecture", gguf::Value::string(arch.gguf_arch));
  set("general.type", gguf::Value::string("model"));
  const std::string name = !opt.name.empty() ? opt.name
                                             : std::filesystem::path(files.dir).lexically_normal().filename().string();
  set("general.name", gguf::Value::string(name.empty() ? std::string("model") : name));
  for (gguf::KeyValue& kv : p.kvs) plan.kvs.push_back(std::move(kv));
  set("general.file_type", gguf::Value::u32(file_type));
  set("general.quantization_version", gguf::Value::u32(kQuantizationVersion));
  for (gguf::KeyValue& kv : vocab.kvs) plan.kvs.push_back(std::move(kv));
  plan.dims = p.dims;
  plan.notes = std::move(p.notes);
  plan.notes.insert(plan.notes.end(), vocab.notes.begin(), vocab.notes.end());
  plan.vocab_summary = vocab.summary;
  return plan;
}

}  // namespace

ConvertPlan plan_conversion(const HfFiles& files, const Checkpoint& ckpt, const ConvertOptions& opt) {
  try {
    return plan_checked(files, ckpt, opt);
  } catch (const Json::exception& e) {
    // A JSON value of an unexpected type that a reader did not check first.
    throw ModelError(files.dir + ": unexpected JSON content: " + e.what());
  }
}

void write_gguf(const ConvertPlan& plan, const std::string& out, const ConvertProgress& progress) {
  gguf::Writer w;
  for (const gguf::KeyValue& kv : plan.kvs) w.set(kv.key, kv.value);
  for (const PlannedTensor& t : plan.tensors) w.add_tensor(t.name, t.type, t.ne());
  w.open(out);
  std::vector<uint8_t> row_buf;
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    const PlannedTensor& t = plan.tensors[i];
    if (progress) progress(i, plan.tensors.size(), t);
    const std::vector<float> data = tensor_data(t, plan.dims);
    if (t.type == TensorType::F32) {
      w.write_tensor_data(data.data(), data.size() * sizeof(float));
      continue;
    }
    const quant::TypeTraits& tt = quant::type_traits(t.type);
    const int64_t n = t.shape.back();
    const uint64_t row_bytes = tensor_row_bytes(t.type, static_cast<uint64_t>(n));
    const auto rows = static_cast<int64_t>(data.size()) / n;
    constexpr int64_t kRowsPerWrite = 64;
    for (int64_t r = 0; r < rows; r += kRowsPerWrite) {
      const int64_t count = std::min(kRowsPerWrite, rows - r);
      row_buf.resize(static_cast<size_t>(row_bytes) * static_cast<size_t>(count));
      for (int64_t k = 0; k < count; ++k) {
        tt.from_float(data.data() + (r + k) * n, row_buf.data() + k * row_bytes, n, nullptr);
      }
      w.write_tensor_data(row_buf.data(), row_buf.size());
    }
  }
  w.close();
}

ConvertPlan convert_checkpoint(const std::string& dir, const std::string& out, const ConvertOptions& opt,
                               const ConvertProgress& progress) {
  const HfFiles files = HfFiles::open(dir);
  const Checkpoint ckpt = Checkpoint::open_dir(dir);
  ConvertPlan plan = plan_conversion(files, ckpt, opt);
  write_gguf(plan, out, progress);
  for (PlannedTensor& t : plan.tensors) {  // they point into the checkpoint, which closes here
    t.sources.clear();
    t.generated.clear();
  }
  return plan;
}

}  // namespace ferrite::convert
