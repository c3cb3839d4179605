// ferrite_cuda_bench --products: times one product y = x · W^T on the GPU per
// (type, shape, rows), once with the engine's path (LinearRunner) and once
// with the path it replaced. Quantized weights: up to kGemvMaxRows rows the
// bandwidth GEMV (gemv_quant.cu) against the dp4a kernel (matmul_quant.cu);
// more rows the int8 tensor-core product (matmul_mma.cu) against the dp4a
// kernel (16 rows or fewer) or dequantize to f16 + cuBLAS. F16 weights (up to
// 16 rows): the round kernel of matmul_f16_fast.cu against its first version
// (legacy_kernels.cu). F32 weights: the CPU-order product (matmul_float.cu,
// what the engine runs) against cuBLAS in f32 (what it no longer offers).
// Weights are random bytes with small valid scales (F16: small random
// values); the activations' conversions are cached, as for the second
// product of a layer. Each run reads another copy of the weights (at least
// 256 MB in all), so that they come from HBM. Products run back to back, so
// with pdl (pdl.cuh) a GEMV's weight loads overlap the previous GEMV's tail
// (in a decode step the kernel before it is a norm or a quantizer).
//
//   ferrite_cuda_bench --products [-r 20] [-t q4_0,q8_0,q4_k,q6_k,f16,f32]
//                      [-s 4096x4096,11008x4096,4096x11008] [-M 1,2,8,32,...]
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/fp16.h"
#include "cuda/backend/linear.h"

namespace ferrite::cuda {
// legacy_kernels.cu
void legacy_gemv_f16(const GpuMatrix& w, const void* x, int64_t m, float* y, bool accumulate, cudaStream_t s);
}  // namespace ferrite::cuda
#include "quant/blocks.h"

namespace {

using namespace ferrite;
using namespace ferrite::cuda;

constexpr uint16_t kSmallScale = 0x1400;  // f16 ~0.001: random quants give finite sums

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(item);
  return out;
}

TensorType parse_type(const std::string& s) {
  if (s == "q4_0") return TensorType::Q4_0;
  if (s == "q8_0") return TensorType::Q8_0;
  if (s == "q4_k") return TensorType::Q4_K;
  if (s == "q6_k") return TensorType::Q6_K;
  if (s == "f16") return TensorType::F16;
  if (s == "f32") return TensorType::F32;
  throw InvalidArgument("product bench: unknown type " + s);
}

// Random GGUF blocks of type t, n rows of k, with every scale field small.
std::vector<uint8_t> random_weights(TensorType t, int64_t n, int64_t k, std::mt19937& rng) {
  const uint64_t row_bytes = tensor_row_bytes(t, static_cast<uint64_t>(k));
  std::vector<uint8_t> bytes(row_bytes * static_cast<uint64_t>(n));
  if (t == TensorType::F16) {
    std::uniform_real_distribution<float> values(-1.0f, 1.0f);
    auto* h = reinterpret_cast<uint16_t*>(bytes.data());
    for (size_t i = 0; i < bytes.size() / 2; ++i) h[i] = fp32_to_fp16(values(rng));
    return bytes;
  }
  if (t == TensorType::F32) {
    std::uniform_real_distribution<float> values(-1.0f, 1.0f);
    auto* f = reinterpret_cast<float*>(bytes.data());
    for (size_t i = 0; i < bytes.size() / 4; ++i) f[i] = values(rng);
    return bytes;
  }
  std::uniform_int_distribution<uint32_t> dist;
  for (size_t i = 0; i + 4 <= bytes.size(); i += 4) {
    const uint32_t v = dist(rng);
    std::memcpy(bytes.data() + i, &v, 4);
  }
  auto set = [&](size_t block_bytes, size_t offset) {
    for (size_t b = 0; b + block_bytes <= bytes.size(); b += block_bytes) {
      std::memcpy(bytes.data() + b + offset, &kSmallScale, 2);
    }
  };
  switch (t) {
    case TensorType::Q4_0: set(sizeof(quant::BlockQ4_0), 0); break;
    case TensorType::Q8_0: set(sizeof(quant::BlockQ8_0), 0); break;
    case TensorType::Q4_K: set(sizeof(quant::BlockQ4_K), 0); set(sizeof(quant::BlockQ4_K), 2); break;
    case TensorType::Q6_K: set(sizeof(quant::BlockQ6_K), offsetof(quant::BlockQ6_K, d)); break;
    default: break;
  }
  return bytes;
}

// Copies of the weights a timing cycles through, so that each product reads
// its matrix from HBM and not from the L2 left by the one before (50 MB on
// the H100): together at least kRotationBytes.
constexpr double kRotationBytes = 256e6;
constexpr int kMaxCopies = 64;

// Mean microseconds of one product over reps runs (after one warm-up), the
// runs cycling through the copies ws.
template <typename Product>
double time_product(cudaStream_t stream, const std::vector<GpuMatrix>& ws, Product&& product, int reps) {
  product(ws[0]);
  cudaEvent_t t0, t1;
  FERRITE_CUDA_CHECK(cudaEventCreate(&t0));
  FERRITE_CUDA_CHECK(cudaEventCreate(&t1));
  FERRITE_CUDA_CHECK(cudaEventRecord(t0, stream));
  for (int r = 0; r < reps; ++r) product(ws[static_cast<size_t>(r) % ws.size()]);
  FERRITE_CUDA_CHECK(cudaEventRecord(t1, stream));
  FERRITE_CUDA_CHECK(cudaEventSynchronize(t1));
  float ms = 0;
  FERRITE_CUDA_CHECK(cudaEventElapsedTime(&ms, t0, t1));
  cudaEventDestroy(t0);
  cudaEventDestroy(t1);
  return 1000.0 * ms / reps;
}

// y [m, w.n] = x [m, k] · W^T for F32 W through cuBLAS (f32 operands and sums).
void cublas_f32(cublasHandle_t h, const GpuMatrix& w, const float* x, int64_t m, float* y) {
  // Column-major view: Y^T [n, m] = W [n, k] (stored as W^T [k, n]) · X^T [k, m].
  const float alpha = 1.0f, beta = 0.0f;
  FERRITE_CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(w.n), static_cast<int>(m),
                                    static_cast<int>(w.k), &alpha, w.data, CUDA_R_32F, static_cast<int>(w.k), x,
                                    CUDA_R_32F, static_cast<int>(w.k), &beta, y, CUDA_R_32F, static_cast<int>(w.n),
                                    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace

int product_bench(int argc, char** argv) {
  int reps = 20;
  std::string types = "q4_0,q8_0,q4_k,q6_k", shapes = "4096x4096,11008x4096,4096x11008";
  std::string rows = "1,2,4,8,16,17,24,32,48,64,96,128,192,256,384,512";
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "-r") reps = std::atoi(argv[i + 1]);
    else if (a == "-t") types = argv[i + 1];
    else if (a == "-s") shapes = argv[i + 1];
    else if (a == "-M") rows = argv[i + 1];
  }
  try {
    std::mt19937 rng(1234);
    cudaStream_t stream = nullptr;
    // old: no mma (dequantize + cuBLAS above 16 rows; below, the earlier
    // kernels called directly); mma: every batch through matmul_mma; gemv: the default decode kernels.
    LinearRunner old_path(stream), mma_path(stream), gemv_path(stream);
    old_path.set_mma_rows(1, 0);
    mma_path.set_mma_rows(1, int64_t{1} << 40);
    cublasHandle_t cublas = nullptr;
    FERRITE_CUBLAS_CHECK(cublasCreate(&cublas));
    gemv_path.set_mma_rows(1, 0);
    set_exact_products(false);
    std::printf("%-5s %6s %6s %4s %10s %10s %7s %9s %5s\n", "type", "n", "k", "m", "old_us", "new_us", "speedup",
                "new_GB/s", "new");
    for (const std::string& ts : split(types)) {
      const TensorType t = parse_type(ts);
      for (const std::string& sh : split(shapes)) {
        const int64_t n = std::stoll(sh.substr(0, sh.find('x'))), k = std::stoll(sh.substr(sh.find('x') + 1));
        const std::vector<uint8_t> host = random_weights(t, n, k, rng);
        const int copies = std::min(kMaxCopies, std::max(1, static_cast<int>(kRotationBytes / host.size()) + 1));
        std::vector<DeviceBuffer> wbufs(static_cast<size_t>(copies));
        std::vector<GpuMatrix> ws;
        for (auto& b : wbufs) ws.push_back(upload_matrix(t, n, k, host.data(), b, "w"));
        for (const std::string& ms : split(rows)) {
          const int64_t m = std::stoll(ms);
          std::vector<float> x(static_cast<size_t>(m * k));
          std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
          for (auto& v : x) v = dist(rng);
          DeviceBuffer xd(x.size() * sizeof(float)), yd(static_cast<size_t>(m * n) * sizeof(float));
          FERRITE_CUDA_CHECK(cudaMemcpy(xd.as(), x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));
          Activation act;
          act.set(xd.as<float>(), m, k);
          const bool gemv = m <= kGemvMaxRows || t == TensorType::F16 || t == TensorType::F32;
          float* y = yd.as<float>();
          auto old_product = [&](const GpuMatrix& w) {
            if (t == TensorType::F32) {
              cublas_f32(cublas, w, act.x(), m, y);
            } else if (t == TensorType::F16 && m <= kGemmMinRows) {
              legacy_gemv_f16(w, act.f16(stream), m, y, false, stream);
            } else if (m <= kGemmMinRows) {
              matmul_quant(w, act.quantized(act_format_for(t), stream), m, y, false, stream);
            } else {
              old_path.run(w, act, y);
            }
          };
          LinearRunner& new_path = gemv ? gemv_path : mma_path;
          auto new_product = [&](const GpuMatrix& w) { new_path.run(w, act, y); };
          const double old_us = time_product(stream, ws, old_product, reps);
          const double new_us = time_product(stream, ws, new_product, reps);
          std::printf("%-5s %6lld %6lld %4lld %10.1f %10.1f %7.2f %9.0f %5s\n", ts.c_str(), static_cast<long long>(n),
                      static_cast<long long>(k), static_cast<long long>(m), old_us, new_us, old_us / new_us,
                      host.size() / (new_us * 1e3), gemv ? "gemv" : "mma");
          std::fflush(stdout);
        }
      }
    }
    cublasDestroy(cublas);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
