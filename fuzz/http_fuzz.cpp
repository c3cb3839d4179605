// libFuzzer target for the server's HTTP request reader (src/server/http):
// any byte string, cut into reads at places the input chooses, is parsed as
// one connection's requests (keep-alive, pipelining, chunked bodies). It must
// yield requests within the limits or a 4xx/5xx refusal; never crash, hang,
// or hold more than the limits allow. The checks a request then meets
// (Host, Origin, Content-Type, query parameters) run on what was parsed.
#include <cstddef>
#include <cstdint>
#include <string>

#include "server/http/request_reader.h"
#include "server/request_policy.h"

namespace {

using ferrite::server::http::ReaderLimits;
using ferrite::server::http::Request;
using ferrite::server::http::RequestReader;
using Status = RequestReader::Status;

constexpr size_t kMaxInput = 64 * 1024;

ReaderLimits limits() {
  ReaderLimits l;
  l.max_header_bytes = 2048;
  l.max_header_count = 16;
  l.max_body_bytes = 4096;
  return l;
}

void check(const Request& r) {
  const ferrite::server::OriginPolicy policy{true, {"https://app.example"}};
  (void)ferrite::server::check_host(r, policy);
  (void)ferrite::server::check_origin(r, policy);
  (void)ferrite::server::is_json_content_type(r.header("Content-Type"));
  (void)r.param("action");
  if (r.body.size() > limits().max_body_bytes) __builtin_trap();
  if (r.headers.size() > limits().max_header_count) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > kMaxInput) return 0;
  // The first byte sets the size of each read (1..256 bytes).
  const size_t step = static_cast<size_t>(data[0]) + 1;
  const std::string input(reinterpret_cast<const char*>(data + 1), size - 1);
  RequestReader reader(limits());
  std::string buffer;
  size_t at = 0;
  for (int requests = 0; requests < 64;) {
    if (at < input.size()) {
      const size_t n = std::min(step, input.size() - at);
      buffer.append(input, at, n);
      at += n;
    }
    Status s;
    for (;;) {
      s = reader.parse(buffer);
      if (s != Status::Header) break;
      check(reader.request());
      reader.proceed();
    }
    if (s == Status::Failed) {
      if (reader.error_status() < 400 || reader.error_status() > 599) __builtin_trap();
      break;
    }
    if (s == Status::Complete) {
      check(reader.take());
      ++requests;
      continue;
    }
    // What Beast has not consumed stays bounded by the header limit (plus a read).
    if (buffer.size() > limits().max_header_bytes + step) __builtin_trap();
    if (at >= input.size()) break;  // the client has nothing more to send
  }
  return 0;
}
