#include "server/http/request_reader.h"

#include <cctype>
#include <iterator>
#include <string_view>
#include <optional>

#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

namespace ferrite::server::http {
namespace {

namespace bh = boost::beast::http;

constexpr int kBadRequest = 400;
constexpr int kPayloadTooLarge = 413;
constexpr int kHeaderTooLarge = 431;
constexpr int kVersionNotSupported = 505;
constexpr int kHttp10 = 10;
constexpr int kHttp11 = 11;

// Whether the request line ends in a well-formed version ("HTTP/2.0"):
// then a refused version is 505 rather than a malformed request.
bool names_a_version(std::string_view in) {
  std::string_view line = in.substr(0, in.find('\n'));
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  const size_t at = line.rfind(" HTTP/");
  if (at == std::string_view::npos) return false;
  const std::string_view v = line.substr(at + 6);
  return v.size() == 3 && std::isdigit(static_cast<unsigned char>(v[0])) && v[1] == '.' &&
         std::isdigit(static_cast<unsigned char>(v[2]));
}

}  // namespace

struct RequestReader::Impl {
  std::optional<bh::request_parser<bh::string_body>> parser;
};

RequestReader::RequestReader(const ReaderLimits& limits) : limits_(limits), impl_(std::make_unique<Impl>()) {
  reset();
}

RequestReader::~RequestReader() = default;

void RequestReader::reset() {
  auto& p = impl_->parser;
  p.emplace();
  p->header_limit(static_cast<std::uint32_t>(std::min<size_t>(limits_.max_header_bytes, UINT32_MAX)));
  p->body_limit(static_cast<std::uint64_t>(limits_.max_body_bytes));
  p->eager(false);  // stop after the headers: they are checked before the body is read
  req_ = Request{};
  started_ = false;
  header_reported_ = false;
  proceeding_ = false;
}

RequestReader::Status RequestReader::fail(int status, std::string message) {
  error_status_ = status;
  error_message_ = std::move(message);
  keep_alive_ = false;
  return Status::Failed;
}

RequestReader::Status RequestReader::header_done() {
  const auto& m = impl_->parser->get();
  size_t count = 0;
  for (auto it = m.begin(); it != m.end(); ++it) {
    if (++count > limits_.max_header_count) {
      return fail(kHeaderTooLarge, "more than " + std::to_string(limits_.max_header_count) + " header fields");
    }
  }
  const unsigned version = m.version();
  if (version != kHttp10 && version != kHttp11) {
    return fail(kVersionNotSupported, "only HTTP/1.0 and HTTP/1.1 are served");
  }
  req_.method = std::string(m.method_string());
  req_.target = std::string(m.target());
  const size_t q = req_.target.find('?');
  req_.path = req_.target.substr(0, q);
  req_.query = q == std::string::npos ? std::string() : req_.target.substr(q + 1);
  req_.version = static_cast<int>(version);
  req_.headers.reserve(count);
  for (auto it = m.begin(); it != m.end(); ++it) {
    req_.headers.emplace_back(std::string(it->name_string()), std::string(it->value()));
  }
  keep_alive_ = impl_->parser->keep_alive();
  header_reported_ = true;
  return Status::Header;
}

void RequestReader::proceed() {
  proceeding_ = true;
  impl_->parser->eager(true);
}

bool RequestReader::expects_continue() const {
  if (req_.version < kHttp11) return false;
  return iequals(req_.header("Expect"), "100-continue");
}

bool RequestReader::has_body() const {
  const auto& p = *impl_->parser;
  if (p.is_done()) return false;
  return p.chunked() || (p.content_length() && *p.content_length() > 0);
}

RequestReader::Status RequestReader::parse(std::string& in) {
  if (error_status_ != 0) return Status::Failed;
  auto& p = *impl_->parser;
  for (;;) {
    if (header_reported_ && !proceeding_) return Status::Header;
    if (p.is_done()) {
      req_.body = std::move(p.get().body());
      return Status::Complete;
    }
    if (in.empty()) return Status::NeedMore;
    started_ = true;
    boost::beast::error_code ec;
    const size_t used = p.put(boost::asio::buffer(in.data(), in.size()), ec);
    in.erase(0, used);
    if (ec == bh::error::need_more) {
      // Beast wants a whole header, chunk-size line or trailer section in
      // one buffer: what it has not consumed is bounded like the headers.
      if (in.size() > limits_.max_header_bytes) {
        return fail(header_reported_ ? kBadRequest : kHeaderTooLarge,
                    header_reported_ ? "a chunk-size line or trailer section is too long"
                                     : "the request headers exceed " + std::to_string(limits_.max_header_bytes) + " bytes");
      }
      if (used == 0) return Status::NeedMore;
      continue;
    }
    if (ec == bh::error::header_limit) {
      return fail(kHeaderTooLarge, "the request headers exceed " + std::to_string(limits_.max_header_bytes) + " bytes");
    }
    if (ec == bh::error::body_limit) {
      return fail(kPayloadTooLarge, "the request body exceeds " + std::to_string(limits_.max_body_bytes) + " bytes");
    }
    if (ec == bh::error::bad_alloc) return fail(kPayloadTooLarge, "the request is too large");
    if (ec == bh::error::bad_version && names_a_version(in)) {
      return fail(kVersionNotSupported, "only HTTP/1.0 and HTTP/1.1 are served");
    }
    if (ec) return fail(kBadRequest, "malformed HTTP request: " + ec.message());
    if (p.is_header_done() && !header_reported_) {
      const Status s = header_done();
      if (s != Status::Header) return s;
      return Status::Header;
    }
  }
}

Request RequestReader::take() {
  Request out = std::move(req_);
  reset();
  return out;
}

}  // namespace ferrite::server::http
