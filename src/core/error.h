// Typed errors. Every failure that input can cause (a file, a request, the
// command line) is reported with one of these, carrying what failed and why.
// Library code never exits the process.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace ferrite {

// Base of every error ferrite throws on purpose.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// A caller passed an argument that makes no sense (bad option, unknown name).
class InvalidArgument : public Error {
 public:
  explicit InvalidArgument(const std::string& what) : Error(what) {}
};

// An InvalidArgument about one named field of a request (a JSON key, a
// message of a chat), so that an API can say which one.
class InvalidField : public InvalidArgument {
 public:
  InvalidField(const std::string& field, const std::string& what) : InvalidArgument(what), field_(field) {}
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

// The operating system refused an operation on a file or socket.
class IoError : public Error {
 public:
  IoError(const std::string& path, const std::string& what)
      : Error(path + ": " + what), path_(path) {}
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A file's contents violate its format. Names the file, the byte offset where
// the problem was found and the field that was being read.
class FormatError : public Error {
 public:
  FormatError(const std::string& file, uint64_t offset, const std::string& field,
              const std::string& problem)
      : Error(file + ": at byte " + std::to_string(offset) + ", " + field + ": " + problem),
        file_(file),
        offset_(offset),
        field_(field) {}
  const std::string& file() const { return file_; }
  uint64_t offset() const { return offset_; }
  const std::string& field() const { return field_; }

 private:
  std::string file_;
  uint64_t offset_;
  std::string field_;
};

// A model's metadata or tensors are well-formed GGUF but unusable (a required
// key missing, a tensor of the wrong shape, an unknown architecture).
class ModelError : public Error {
 public:
  explicit ModelError(const std::string& what) : Error(what) {}
};

}  // namespace ferrite
