// Helpers of the CUDA tests that run whole models: the ferrite binary, a
// quantized copy of a model file, and every position's logits of a prompt
// through a context.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include <unistd.h>

#include "model/model.h"
#include "runtime/context.h"

namespace ferrite::cuda::test {

// The ferrite binary: FERRITE_BINARY where it exists, else beside this test
// binary (the device machine runs a copy of both).
inline std::filesystem::path ferrite_binary() {
  if (std::filesystem::exists(FERRITE_BINARY)) return FERRITE_BINARY;
  return std::filesystem::read_symlink("/proc/self/exe").parent_path() / "ferrite";
}

// `ferrite quantize source <type>` into a temporary file, removed with the
// object. Throws std::runtime_error when the tool fails.
class QuantizedCopy {
 public:
  QuantizedCopy(const std::filesystem::path& source, const std::string& type)
      : path_(std::filesystem::temp_directory_path() / ("ferrite-" + std::to_string(getpid()) + "-" + type + "-" +
                                                        source.filename().string())) {
    const std::string cmd = ferrite_binary().string() + " quantize " + source.string() + " " + path_.string() +
                            " " + type + " > /dev/null 2>&1";
    if (std::system(cmd.c_str()) != 0) throw std::runtime_error("failed: " + cmd);
  }
  ~QuantizedCopy() {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  QuantizedCopy(const QuantizedCopy&) = delete;
  QuantizedCopy& operator=(const QuantizedCopy&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Every position's logits [tokens, n_vocab] of tokens through a context of
// n_ctx cells, batches of n_batch, the last n_gpu_layers layers on the GPU.
inline std::vector<float> eval_logits(const std::shared_ptr<const model::Model>& model,
                                      const std::vector<int32_t>& tokens, int64_t n_ctx, int64_t n_batch,
                                      int n_gpu_layers) {
  runtime::ContextParams cp;
  cp.n_ctx = n_ctx;
  cp.n_batch = n_batch;
  cp.n_threads = 2;
  cp.n_gpu_layers = n_gpu_layers;
  runtime::Context ctx(model, cp);
  const std::span<const float> all = ctx.eval(tokens, 0, true);
  return {all.begin(), all.end()};
}

}  // namespace ferrite::cuda::test
