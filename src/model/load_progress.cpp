#include "model/load_progress.h"

#include <algorithm>

namespace ferrite::model {
namespace {

constexpr uint64_t kPageBytes = 4096;                   // stride of the page touches
constexpr uint64_t kReportBytes = uint64_t{16} << 20;  // progress granularity within a tensor

}  // namespace

std::shared_ptr<const Model> load_with_progress(const std::string& path, const LoadProgress& progress) {
  std::shared_ptr<const Model> m = Model::load(path);
  if (!progress) return m;
  uint64_t total = 0;
  for (const auto& t : m->file().tensors()) total += t.n_bytes;
  progress(0, total);
  uint64_t done = 0, since_report = 0;
  uint8_t sink = 0;
  for (const auto& t : m->file().tensors()) {
    if (t.data != nullptr && m->packed().find(&t) == nullptr) {
      // One read per page brings the tensor into memory (repacked ones are in already).
      for (uint64_t off = 0; off < t.n_bytes; off += kPageBytes) {
        sink ^= *static_cast<const volatile uint8_t*>(t.data + off);
        const uint64_t step = std::min(kPageBytes, t.n_bytes - off);
        done += step;
        since_report += step;
        if (since_report >= kReportBytes && done < total) {
          progress(done, total);
          since_report = 0;
        }
      }
    } else {
      done += t.n_bytes;
    }
    if (done < total) progress(done, total);
  }
  static_cast<void>(sink);
  progress(total, total);
  return m;
}

}  // namespace ferrite::model
