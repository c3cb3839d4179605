// The partial file of a download, `<destination>.part`, held under an
// exclusive flock for as long as this object lives, so that two ferrite
// processes never write the same file. Renamed into place only by commit().
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "core/sha256.h"

namespace ferrite::hub {

class PartFile {
 public:
  // Opens or creates the .part of `destination` and locks it. When another
  // process holds the lock, says so through `notify` and waits for it; if that
  // process completed the download meanwhile, returns a closed PartFile with
  // finished_elsewhere() true. Throws IoError.
  static PartFile open_locked(const std::filesystem::path& destination,
                              const std::function<void(const std::string&)>& notify);

  PartFile(PartFile&& other) noexcept;
  PartFile& operator=(PartFile&&) = delete;
  PartFile(const PartFile&) = delete;
  ~PartFile();

  bool finished_elsewhere() const { return fd_ < 0; }
  const std::filesystem::path& path() const { return path_; }

  uint64_t size() const;
  void truncate();
  // Writes all n bytes at `offset`; throws IoError (disk full, ...).
  void write_at(uint64_t offset, const void* data, size_t n);
  // Feeds the first n bytes of the file to `hash`.
  void hash_prefix(Sha256& hash, uint64_t n) const;
  // Unlinks the .part and releases it.
  void remove();
  // Flushes to disk and renames the .part to `destination` (atomic on one
  // file system), then flushes the folder entry.
  void commit(const std::filesystem::path& destination);

 private:
  PartFile(int fd, std::filesystem::path path) : fd_(fd), path_(std::move(path)) {}
  void close_fd();

  int fd_ = -1;
  std::filesystem::path path_;
};

}  // namespace ferrite::hub
