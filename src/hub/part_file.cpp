#include "hub/part_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "hub/download.h"
#include "hub/progress.h"

namespace ferrite::hub {
namespace {

constexpr size_t kReadChunk = 1 << 20;
constexpr mode_t kFileMode = 0644;

[[noreturn]] void throw_errno(const std::filesystem::path& path, const std::string& what, int err) {
  std::string reason = std::strerror(err);
  if (err == ENOSPC) reason += " (free some space, then run the same command again to resume)";
  throw IoError(path.string(), what + ": " + reason);
}

// The .part must be a regular file of ours with no other name.
void check_ours(int fd, const std::filesystem::path& path) {
  struct stat st {};
  std::string why;
  if (fstat(fd, &st) != 0) {
    why = std::string("cannot stat it: ") + std::strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    why = "it is not a regular file";
  } else if (st.st_uid != geteuid()) {
    why = "it belongs to another user (uid " + std::to_string(st.st_uid) + ")";
  } else if (st.st_nlink != 1) {
    why = "it has other names (hard links)";
  }
  if (why.empty()) return;
  ::close(fd);
  throw IoError(path.string(), "refusing the partial download: " + why);
}

bool same_file(int fd, const std::filesystem::path& path) {
  struct stat by_fd {};
  struct stat by_path {};
  if (fstat(fd, &by_fd) != 0 || stat(path.c_str(), &by_path) != 0) return false;
  return by_fd.st_dev == by_path.st_dev && by_fd.st_ino == by_path.st_ino;
}

}  // namespace

std::filesystem::path partial_path(const std::filesystem::path& destination) {
  std::filesystem::path p = destination;
  p += ".part";
  return p;
}

PartFile PartFile::open_locked(const std::filesystem::path& destination,
                               const std::function<void(const std::string&)>& notify) {
  const std::filesystem::path path = partial_path(destination);
  bool waited = false;
  for (;;) {
    // Never through a link: a .part planted as a symbolic link (or a hard
    // link to another file) would have the download written over its target.
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, kFileMode);
    if (fd < 0) {
      const int err = errno;
      if (err == ELOOP) throw IoError(path.string(), "the partial download is a symbolic link: refusing to follow it");
      throw_errno(path, "cannot create the partial download", err);
    }
    check_ours(fd, path);
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      if (err != EWOULDBLOCK) {
        ::close(fd);
        throw_errno(path, "cannot lock the partial download", err);
      }
      if (notify) notify("waiting for another ferrite process downloading " + terminal_safe(destination.string()));
      waited = true;
      int rc;
      do {
        rc = flock(fd, LOCK_EX);
      } while (rc != 0 && errno == EINTR);
      if (rc != 0) {
        const int err2 = errno;
        ::close(fd);
        throw_errno(path, "cannot lock the partial download", err2);
      }
    }
    // The holder may have renamed the .part into place or removed it while we
    // waited: then our descriptor is no longer the .part, so start over.
    if (same_file(fd, path)) return PartFile(fd, path);
    ::close(fd);
    if (waited && std::filesystem::exists(destination)) return PartFile(-1, path);
  }
}

PartFile::PartFile(PartFile&& other) noexcept : fd_(other.fd_), path_(std::move(other.path_)) { other.fd_ = -1; }

PartFile::~PartFile() { close_fd(); }

void PartFile::close_fd() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

uint64_t PartFile::size() const {
  struct stat st {};
  if (fstat(fd_, &st) != 0) throw_errno(path_, "cannot stat the partial download", errno);
  return static_cast<uint64_t>(st.st_size);
}

void PartFile::truncate() {
  if (ftruncate(fd_, 0) != 0) throw_errno(path_, "cannot truncate the partial download", errno);
}

void PartFile::write_at(uint64_t offset, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::pwrite(fd_, p, n, static_cast<off_t>(offset));
    if (w < 0) {
      if (errno == EINTR) continue;
      throw_errno(path_, "cannot write the download", errno);
    }
    if (w == 0) throw_errno(path_, "cannot write the download", ENOSPC);
    p += w;
    n -= static_cast<size_t>(w);
    offset += static_cast<uint64_t>(w);
  }
}

void PartFile::hash_prefix(Sha256& hash, uint64_t n) const {
  std::vector<char> buf(kReadChunk);
  uint64_t offset = 0;
  while (offset < n) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), n - offset));
    const ssize_t r = ::pread(fd_, buf.data(), want, static_cast<off_t>(offset));
    if (r < 0) {
      if (errno == EINTR) continue;
      throw_errno(path_, "cannot read the partial download", errno);
    }
    if (r == 0) throw IoError(path_.string(), "partial download shrank while being read");
    hash.update(buf.data(), static_cast<size_t>(r));
    offset += static_cast<uint64_t>(r);
  }
}

void PartFile::remove() {
  // Unlink while still holding the lock, so a waiting process sees it gone.
  ::unlink(path_.c_str());
  close_fd();
}

void PartFile::commit(const std::filesystem::path& destination) {
  if (fsync(fd_) != 0) throw_errno(path_, "cannot flush the download to disk", errno);
  if (::rename(path_.c_str(), destination.c_str()) != 0) {
    throw_errno(destination, "cannot move the download into place", errno);
  }
  close_fd();
  const std::filesystem::path dir = destination.has_parent_path() ? destination.parent_path() : ".";
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);  // best effort: the rename is already visible
    ::close(dfd);
  }
}

}  // namespace ferrite::hub
