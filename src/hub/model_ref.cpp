#include "hub/model_ref.h"

#include "core/error.h"

namespace ferrite::hub {
namespace {

constexpr char kDefaultRevision[] = "main";

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
         c == '.';
}

// One component of a repository id or revision: letters, digits, '-', '_', '.'.
void check_name(const std::string& arg, const std::string& part, const char* what) {
  if (part.empty() || part == "." || part == "..") {
    throw InvalidArgument("'" + arg + "': " + what + " is empty or invalid (expected owner/repo:file.gguf)");
  }
  for (char c : part) {
    if (!is_name_char(c)) {
      throw InvalidArgument("'" + arg + "': " + what + " '" + part + "' contains the character '" +
                            std::string(1, c) + "' (allowed: letters, digits, '-', '_', '.')");
    }
  }
}

// A path inside the repository: '/'-separated components, none empty, "." or
// "..", no backslashes or control characters, so that it stays inside the
// cache folder.
void check_repo_path(const std::string& arg, const std::string& file) {
  if (file.empty()) throw InvalidArgument("'" + arg + "': the file name after ':' is empty");
  size_t begin = 0;
  while (begin <= file.size()) {
    size_t end = file.find('/', begin);
    if (end == std::string::npos) end = file.size();
    const std::string comp = file.substr(begin, end - begin);
    if (comp.empty() || comp == "." || comp == "..") {
      throw InvalidArgument("'" + arg + "': file path '" + file + "' has an empty, '.' or '..' component");
    }
    begin = end + 1;
  }
  for (unsigned char c : file) {
    if (c < 0x20 || c == 0x7f || c == '\\') {
      throw InvalidArgument("'" + arg + "': file path contains a control character or backslash");
    }
  }
}

}  // namespace

std::string HfFile::to_string() const {
  std::string s = repo;
  if (revision != kDefaultRevision) s += "@" + revision;
  return s + ":" + file;
}

bool looks_like_hf_file(const std::string& arg) {
  const size_t colon = arg.find(':');
  if (colon == std::string::npos || colon == 0) return false;
  const std::string head = arg.substr(0, colon);
  if (head.front() == '/' || head.front() == '.') return false;
  const size_t slash = head.find('/');
  return slash != std::string::npos && slash + 1 < head.size() && head.find('/', slash + 1) == std::string::npos;
}

HfFile parse_hf_file(const std::string& arg) {
  if (!looks_like_hf_file(arg)) {
    throw InvalidArgument("'" + arg + "' is not a Hugging Face file reference (expected owner/repo:file.gguf)");
  }
  const size_t colon = arg.find(':');
  std::string head = arg.substr(0, colon);
  HfFile f;
  f.file = arg.substr(colon + 1);
  if (const size_t at = head.find('@'); at != std::string::npos) {
    f.revision = head.substr(at + 1);
    head.resize(at);
    check_name(arg, f.revision, "revision");
  }
  const size_t slash = head.find('/');
  check_name(arg, head.substr(0, slash), "repository owner");
  check_name(arg, head.substr(slash + 1), "repository name");
  f.repo = head;
  check_repo_path(arg, f.file);
  return f;
}

std::string url_encode_path(const std::string& s) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if (is_name_char(static_cast<char>(c)) || c == '~' || c == '/') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xF]);
    }
  }
  return out;
}

std::string hf_resolve_url(const std::string& endpoint, const HfFile& f) {
  std::string base = endpoint;
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base + "/" + f.repo + "/resolve/" + url_encode_path(f.revision) + "/" + url_encode_path(f.file);
}

std::filesystem::path cache_relative_path(const HfFile& f) {
  const size_t slash = f.repo.find('/');
  std::string name = f.repo.substr(slash + 1);
  if (f.revision != kDefaultRevision) name += "@" + f.revision;
  return std::filesystem::path(f.repo.substr(0, slash)) / name / f.file;
}

}  // namespace ferrite::hub
