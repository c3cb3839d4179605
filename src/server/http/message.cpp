#include "server/http/message.h"

namespace ferrite::server::http {
namespace {

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

uint64_t ClientLink::on_gone(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!gone()) {
      const uint64_t h = next_++;
      callbacks_.emplace(h, std::move(fn));
      return h;
    }
  }
  fn();
  return 0;
}

void ClientLink::forget(uint64_t handle) {
  std::lock_guard<std::mutex> lock(mu_);
  callbacks_.erase(handle);
}

void ClientLink::mark_gone() {
  std::map<uint64_t, std::function<void()>> fns;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (gone()) return;
    gone_.store(true, std::memory_order_release);
    fns.swap(callbacks_);
  }
  for (auto& [h, fn] : fns) fn();
}

GoneGuard::GoneGuard(std::shared_ptr<ClientLink> link, std::function<void()> fn) : link_(std::move(link)) {
  if (link_) handle_ = link_->on_gone(std::move(fn));
}

GoneGuard::~GoneGuard() {
  if (link_ && handle_) link_->forget(handle_);
}

std::string Request::header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (iequals(k, name)) return v;
  }
  return {};
}

bool Request::has_header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (iequals(k, name)) return true;
  }
  return false;
}

std::string Request::param(std::string_view name) const {
  std::string_view q = query;
  while (!q.empty()) {
    const size_t amp = q.find('&');
    const std::string_view pair = q.substr(0, amp);
    const size_t eq = pair.find('=');
    if (percent_decode(pair.substr(0, eq)) == name) {
      return eq == std::string_view::npos ? std::string() : percent_decode(pair.substr(eq + 1));
    }
    if (amp == std::string_view::npos) break;
    q.remove_prefix(amp + 1);
  }
  return {};
}

void Response::set_header(std::string name, std::string value) {
  for (auto& [k, v] : headers) {
    if (iequals(k, name)) {
      v = std::move(value);
      return;
    }
  }
  headers.emplace_back(std::move(name), std::move(value));
}

void Response::set_content(std::string body_text, std::string type) {
  body = std::move(body_text);
  content_type = std::move(type);
}

const char* status_text(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 204: return "No Content";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return status < 400 ? "OK" : status < 500 ? "Bad Request" : "Server Error";
  }
}

std::string percent_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%' && i + 2 < s.size() && hex_value(s[i + 1]) >= 0 &&
               hex_value(s[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace ferrite::server::http
