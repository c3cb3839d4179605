#include "model/packed_weights.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "cpu/backend/cpu_backend.h"
#include "cpu/features.h"
#include "cpu/matmul.h"
#include "cpu/packed/packed_float.h"
#include "cpu/packed/packed_matmul.h"
#include "model/weights.h"

namespace ferrite::model {
namespace {

// Threads copying tensors at load (each copy is a page-fault-bound stream).
constexpr unsigned kMaxPackThreads = 8;
// Rows packed between two hand-backs of mapped pages (a multiple of the
// 16-row group).
constexpr int64_t kPackSliceRows = 256;

// Every live PackedWeights' copies, for WeightBinder's lookups.
std::mutex g_mutex;
std::unordered_map<const gguf::TensorInfo*, const uint8_t*> g_packed;

// set_float_repack's override: -1 none (environment), 0 off, 1 on.
std::atomic<int> g_float_override{-1};

bool repack_float_enabled(bool by_switch) {
  const int forced = g_float_override.load();
  return forced >= 0 ? forced == 1 : by_switch;
}

cpu::MatView view_of(const gguf::TensorInfo& t) { return cpu::mat_view(Tensor{&t}); }

// Hands the whole pages inside [p, p + n) of a read-only file mapping back
// to the kernel; a later read faults them in again from the file.
void drop_pages(const uint8_t* p, uint64_t n) {
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + n) / page * page;
  if (end <= begin) return;
  // No huge-page mappings of the range either: a file folio of 2 MiB that
  // spans a dropped matrix and a small tensor beside it (a norm read every
  // step) was mapped back whole at the small tensor's first read, ~80 MB of
  // dropped pages resident again (llama-1b Q4_K_M, peak RSS 787 -> 718 MiB).
  ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_NOHUGEPAGE);
  ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

}  // namespace

std::unique_ptr<PackedWeights> PackedWeights::build(const gguf::File& file, bool repack, bool repack_float) {
  std::unique_ptr<PackedWeights> pw(new PackedWeights());
  if (!repack) return pw;
  const bool floats = repack_float_enabled(repack_float);
  const bool has_output = file.find_tensor("output.weight") != nullptr;
  std::vector<const gguf::TensorInfo*> todo;
  for (const gguf::TensorInfo& t : file.tensors()) {
    if (t.data == nullptr || (has_output && t.name == "token_embd.weight")) continue;
    if (t.n_dims < 2 || !cpu::packable(view_of(t))) continue;
    const bool quant_kernel = cpu::find_packed_kernel(t.type, cpu::active_isa()) != nullptr;
    const bool float_kernel = floats && cpu::find_packed_float_kernel(t.type) != nullptr;
    if (!quant_kernel && !float_kernel) continue;
    todo.push_back(&t);
  }
  if (todo.empty()) return pw;
  std::vector<cpu::PackedBuffer> buffers;
  buffers.reserve(todo.size());
  for (const gguf::TensorInfo* t : todo) buffers.emplace_back(t->n_bytes);

  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next.fetch_add(1); i < todo.size(); i = next.fetch_add(1)) {
      // Slice by slice, each slice's mapped pages handed back once packed:
      // while packing, a thread holds one slice of mapped pages beside the
      // copies, not a whole matrix (a 128k-vocab output matrix is ~0.5 GB).
      const cpu::MatView view = view_of(*todo[i]);
      for (int64_t r0 = 0; r0 < view.n; r0 += kPackSliceRows) {
        const cpu::MatView slice = view.rows(r0, std::min(kPackSliceRows, view.n - r0));
        cpu::pack_rows(slice, buffers[i].data() + static_cast<uint64_t>(r0) * view.row_bytes);
        drop_pages(slice.data, static_cast<uint64_t>(slice.n) * slice.row_bytes);
      }
      drop_pages(todo[i]->data, todo[i]->n_bytes);  // the pages slices shared
    }
  };
  const unsigned n_threads = std::clamp(std::thread::hardware_concurrency(), 1u, kMaxPackThreads);
  std::vector<std::thread> threads;
  for (unsigned i = 1; i < n_threads && i < todo.size(); ++i) threads.emplace_back(work);
  work();
  for (auto& th : threads) th.join();

  std::lock_guard<std::mutex> lock(g_mutex);
  for (size_t i = 0; i < todo.size(); ++i) {
    g_packed[todo[i]] = buffers[i].data();
    pw->bytes_ += todo[i]->n_bytes;
    pw->copies_.emplace(todo[i], std::move(buffers[i]));
  }
  return pw;
}

PackedWeights::~PackedWeights() {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (const auto& [t, buf] : copies_) g_packed.erase(t);
}

const uint8_t* PackedWeights::find(const gguf::TensorInfo* t) const {
  const auto it = copies_.find(t);
  return it == copies_.end() ? nullptr : it->second.data();
}

void set_float_repack(std::optional<bool> on) { g_float_override.store(on.has_value() ? (*on ? 1 : 0) : -1); }

const uint8_t* find_packed(const gguf::TensorInfo* t) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const auto it = g_packed.find(t);
  return it == g_packed.end() ? nullptr : it->second;
}

}  // namespace ferrite::model
