// `ferrite quantize IN OUT TYPE [--imatrix F] [--override REGEX=TYPE]
// [--threads N] [--pure]`: re-encodes a GGUF model with one of llama.cpp's
// preset mixes (Q4_K_M, Q8_0, IQ4_XS, ...; any case).
#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <chrono>
#include <cstdio>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "command.h"
#include "core/error.h"
#include "gguf/file.h"
#include "gguf/writer.h"
#include "quant/dequantize.h"
#include "quant/imatrix.h"
#include "quant/mix.h"
#include "quant/type_traits.h"
#include "model_path.h"
#include "quant_progress.h"

namespace ferrite::tools {
namespace {

struct QuantizeOptions {
  std::string input, output, type;
  std::string imatrix;
  std::vector<std::string> overrides;
  int threads = 0;
  bool pure = false;
};

constexpr uint32_t kQuantizationVersion = 2;  // general.quantization_version of current ggml files

std::pair<std::regex, TensorType> parse_override(const std::string& spec) {
  const size_t eq = spec.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
    throw InvalidArgument("--override wants REGEX=TYPE, got '" + spec + "'");
  }
  const auto type = tensor_type_from_name(spec.substr(eq + 1));
  if (!type || quant::find_type_traits(*type) == nullptr) {
    throw InvalidArgument("--override " + spec + ": unknown type '" + spec.substr(eq + 1) + "'");
  }
  try {
    return {std::regex(spec.substr(0, eq)), *type};
  } catch (const std::regex_error& e) {
    throw InvalidArgument("--override " + spec + ": bad regular expression: " + e.what());
  }
}

// Quantizes `n_rows` rows of f32 `src` on `threads` threads. Importance per
// row comes from `imp` (n_per_row values per matrix of `rows_per_matrix` rows).
void quantize_parallel(TensorType type, const float* src, uint8_t* dst, int64_t n_rows, int64_t n_per_row,
                       int64_t rows_per_matrix, const std::vector<float>* imp, int threads) {
  const quant::TypeTraits& tt = quant::type_traits(type);
  const uint64_t row_bytes = static_cast<uint64_t>(n_per_row / tt.block_size) * tt.block_bytes;
  const int64_t n_mat = n_rows / rows_per_matrix;
  auto importance_of = [&](int64_t mat) -> const float* {
    if (imp == nullptr) return nullptr;
    const auto offset = static_cast<size_t>(mat * n_per_row);
    return imp->size() >= offset + static_cast<size_t>(n_per_row) ? imp->data() + offset : imp->data();
  };
  constexpr int64_t kRowsPerChunk = 16;
  std::atomic<int64_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto worker = [&] {
    try {
      for (;;) {
        const int64_t start = next.fetch_add(kRowsPerChunk);
        if (start >= n_rows) break;
        const int64_t end = std::min(n_rows, start + kRowsPerChunk);
        for (int64_t r = start; r < end;) {
          const int64_t mat = r / rows_per_matrix;
          const int64_t stop = std::min(end, (mat + 1) * rows_per_matrix);
          quant::quantize_rows(type, src + r * n_per_row, dst + static_cast<uint64_t>(r) * row_bytes, stop - r,
                               n_per_row, importance_of(mat));
          r = stop;
        }
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(failure_mutex);
      if (!failure) failure = std::current_exception();
      next.store(n_rows);
    }
  };
  (void)n_mat;
  std::vector<std::thread> pool;
  for (int i = 1; i < threads; ++i) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

int run_quantize(const QuantizeOptions& opt) {
  const quant::Preset* preset = quant::find_preset(opt.type);
  if (preset == nullptr) {
    std::string names;
    for (const auto& p : quant::presets()) names += std::string(" ") + p.name;
    throw InvalidArgument("unknown quantization type '" + opt.type + "'; known:" + names);
  }
  const gguf::File in = gguf::File::open(resolve_model_argument(opt.input));
  std::unique_ptr<quant::Imatrix> imatrix;
  if (!opt.imatrix.empty()) imatrix = std::make_unique<quant::Imatrix>(quant::Imatrix::read(opt.imatrix));

  quant::MixOptions mix;
  mix.pure = opt.pure;
  mix.has_imatrix = imatrix != nullptr;
  for (const auto& o : opt.overrides) mix.overrides.push_back(parse_override(o));
  const std::vector<TensorType> types = quant::plan_mix(in, *preset, mix);

  // Check every target before writing anything.
  for (size_t i = 0; i < types.size(); ++i) {
    const auto& t = in.tensors()[i];
    if (types[i] == t.type) continue;
    const quant::TypeTraits& tt = quant::type_traits(types[i]);
    if (tt.from_float == nullptr) {
      throw InvalidArgument(std::string("quantizing to ") + tt.name + " (needed by " + preset->name + " for " + t.name +
                            ") is not supported yet");
    }
    if (quant::find_type_traits(t.type) == nullptr) {
      throw InvalidArgument("cannot convert " + t.name + " from " + tensor_type_name(t.type));
    }
    if (tt.needs_imatrix && (imatrix == nullptr || imatrix->importance(t.name) == nullptr)) {
      throw InvalidArgument(std::string(tt.name) + " for " + t.name +
                            " needs an importance matrix entry (--imatrix FILE): without one the weights are unusable");
    }
  }

  gguf::Writer w;
  w.copy_metadata(in);
  w.set("general.file_type", gguf::Value::u32(preset->file_type));
  w.set("general.quantization_version", gguf::Value::u32(kQuantizationVersion));
  for (size_t i = 0; i < types.size(); ++i) {
    const auto& t = in.tensors()[i];
    w.add_tensor(t.name, types[i], std::vector<int64_t>(t.ne.begin(), t.ne.begin() + t.n_dims));
  }
  w.open(opt.output);

  const int threads = opt.threads > 0 ? opt.threads : std::max(1u, std::thread::hardware_concurrency());
  const auto start = std::chrono::steady_clock::now();
  Progress progress(in.tensor_bytes());
  uint64_t bytes_in = 0, bytes_out = 0;
  std::vector<float> f32;
  std::vector<uint8_t> out;
  for (size_t i = 0; i < types.size(); ++i) {
    const auto& t = in.tensors()[i];
    progress.update(bytes_in, t.name, tensor_type_name(types[i]));
    if (types[i] == t.type) {
      w.write_tensor_data(t.data, t.n_bytes);
      bytes_out += t.n_bytes;
    } else {
      const int64_t n_per_row = t.ne[0];
      const int64_t n_rows = static_cast<int64_t>(t.n_elements) / n_per_row;
      f32.resize(t.n_elements);
      for (int64_t r = 0; r < n_rows; ++r) {
        quant::dequantize_row(t.type, t.data + static_cast<uint64_t>(r) * t.row_bytes(), f32.data() + r * n_per_row,
                              n_per_row);
      }
      const uint64_t n_bytes = tensor_row_bytes(types[i], static_cast<uint64_t>(n_per_row)) * static_cast<uint64_t>(n_rows);
      out.resize(n_bytes);
      const std::vector<float>* imp = imatrix ? imatrix->importance(t.name) : nullptr;
      quantize_parallel(types[i], f32.data(), out.data(), n_rows, n_per_row, std::max<int64_t>(1, t.ne[1]), imp,
                        threads);
      w.write_tensor_data(out.data(), n_bytes);
      bytes_out += n_bytes;
    }
    bytes_in += t.n_bytes;
  }
  w.close();
  progress.finish();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr, "%s: %.1f MiB -> %.1f MiB (%s) in %.1f s\n", opt.output.c_str(),
               static_cast<double>(bytes_in) / (1 << 20), static_cast<double>(bytes_out) / (1 << 20), preset->name,
               secs);
  return 0;
}

const CommandRegistrar kQuantize(
    {"quantize", "Re-encode a GGUF model with a quantization preset (Q4_K_M, Q8_0, IQ4_XS, ...)",
     [](CLI::App& sub) -> std::function<int()> {
       auto opt = std::make_shared<QuantizeOptions>();
       sub.add_option("input", opt->input, "Input GGUF: a file or a model name")->required();
       sub.add_option("output", opt->output, "Output GGUF")->required();
       sub.add_option("type", opt->type, "Preset, any case: Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K_S/M/L Q4_K_S/M Q5_K_S/M Q6_K IQ1_S IQ1_M IQ2_XXS/XS/S/M IQ3_XXS/XS/S/M IQ4_NL IQ4_XS TQ1_0 TQ2_0 MXFP4 MXFP4_MOE F16 BF16 (IQ1/IQ2 need --imatrix; MXFP4_MOE: experts MXFP4, the rest Q8_0); Q3_K/Q4_K/Q5_K mean the _M mixes; llama.cpp's numeric file types work too")
           ->required();
       sub.add_option("--imatrix", opt->imatrix, "Importance matrix (llama.cpp imatrix format)");
       sub.add_option("--override", opt->overrides, "REGEX=TYPE: tensors whose name matches get TYPE (repeatable)");
       sub.add_option("--threads,-t", opt->threads, "Worker threads (default: all cores)");
       sub.add_flag("--pure", opt->pure, "Give every quantizable tensor the preset's base type");
       return [opt] { return run_quantize(*opt); };
     }});

}  // namespace
}  // namespace ferrite::tools
