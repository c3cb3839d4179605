#include "hub/http_headers.h"

#include <charconv>

namespace ferrite::hub {
namespace {

constexpr size_t kSha256HexLength = 64;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}


bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

}  // namespace

std::optional<uint64_t> parse_size(std::string_view value) {
  value = trim(value);
  if (value.empty()) return std::nullopt;
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || end != value.data() + value.size()) return std::nullopt;
  return v;
}

std::optional<ContentRange> parse_content_range(std::string_view value) {
  value = trim(value);
  constexpr std::string_view kUnit = "bytes ";
  if (value.size() < kUnit.size() || !ascii_iequals(value.substr(0, kUnit.size()), kUnit)) return std::nullopt;
  value = trim(value.substr(kUnit.size()));
  const size_t slash = value.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  const std::string_view span = value.substr(0, slash);
  const std::string_view total = value.substr(slash + 1);
  ContentRange r;
  if (trim(total) != "*") {
    const auto t = parse_size(total);
    if (!t) return std::nullopt;
    r.total = *t;
  }
  if (trim(span) == "*") {
    r.unsatisfied = true;
    return r;
  }
  const size_t dash = span.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  const auto first = parse_size(span.substr(0, dash));
  const auto last = parse_size(span.substr(dash + 1));
  if (!first || !last || *last < *first) return std::nullopt;
  if (r.total != 0 && *last >= r.total) return std::nullopt;
  r.first = *first;
  r.last = *last;
  return r;
}

std::optional<std::string> parse_sha256_etag(std::string_view value) {
  value = trim(value);
  if (value.size() >= 2 && (value[0] == 'W' || value[0] == 'w') && value[1] == '/') value.remove_prefix(2);
  if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
  if (value.size() != kSha256HexLength) return std::nullopt;
  std::string out(value);
  for (char& c : out) {
    if (!is_hex(c)) return std::nullopt;
    if (c >= 'A' && c <= 'F') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

void ChainHeaders::add_line(std::string_view line) {
  line = trim(line);
  if (line.size() >= 5 && line.substr(0, 5) == "HTTP/") {
    last = ResponseHeaders{};
    const size_t sp = line.find(' ');
    if (sp != std::string_view::npos) {
      std::string_view code = line.substr(sp + 1);
      code = code.substr(0, code.find(' '));
      if (const auto v = parse_size(code)) last.status = static_cast<long>(*v);
    }
    return;
  }
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) return;
  const std::string_view name = trim(line.substr(0, colon));
  const std::string_view value = trim(line.substr(colon + 1));
  if (ascii_iequals(name, "content-length")) {
    last.content_length = parse_size(value);
  } else if (ascii_iequals(name, "content-range")) {
    last.content_range = parse_content_range(value);
  } else if (ascii_iequals(name, "etag")) {
    last.etag = value;
  } else if (ascii_iequals(name, "x-linked-etag")) {
    linked_etag = value;
  } else if (ascii_iequals(name, "x-linked-size")) {
    linked_size = parse_size(value);
  } else if (ascii_iequals(name, "x-error-code")) {
    last.error_code = value;
  } else if (ascii_iequals(name, "x-error-message")) {
    last.error_message = value;
  }
}

bool ascii_iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

}  // namespace ferrite::hub
