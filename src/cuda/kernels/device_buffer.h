// Device memory owned by one object (cudaMalloc / cudaFree), grown on demand.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "cuda/kernels/check.h"

namespace ferrite::cuda {

// Bumped whenever device memory of a DeviceBuffer moves: captured CUDA
// graphs hold addresses and are stale after a bump.
inline std::atomic<uint64_t> g_buffer_generation{0};

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) { resize(bytes); }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      release();
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }

  // Exactly `bytes` (contents lost when the size changes).
  void resize(size_t bytes) {
    if (bytes == bytes_) return;
    release();
    ++g_buffer_generation;
    if (bytes > 0) FERRITE_CUDA_CHECK(cudaMalloc(&ptr_, bytes));
    bytes_ = bytes;
  }
  // At least `bytes` (never shrinks; contents lost when it grows).
  void reserve(size_t bytes) {
    if (bytes > bytes_) resize(bytes);
  }

  size_t size() const { return bytes_; }
  template <typename T = void>
  T* as() const { return static_cast<T*>(ptr_); }

 private:
  void release() {
    if (ptr_ != nullptr) cudaFree(ptr_);
    ptr_ = nullptr;
    bytes_ = 0;
  }
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Page-locked host memory (cudaMallocHost), grown on demand: copies from and
// to it are truly asynchronous.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer() {
    if (ptr_ != nullptr) cudaFreeHost(ptr_);
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  // At least `bytes` (contents lost when it grows).
  void reserve(size_t bytes) {
    if (bytes <= bytes_) return;
    if (ptr_ != nullptr) cudaFreeHost(ptr_);
    ptr_ = nullptr;
    bytes_ = 0;
    FERRITE_CUDA_CHECK(cudaMallocHost(&ptr_, bytes));
    bytes_ = bytes;
  }
  template <typename T = void>
  T* as() const { return static_cast<T*>(ptr_); }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace ferrite::cuda
