// Turns the bytes a client sends into requests, one at a time, with every
// limit checked while reading: request line and header bytes, header count,
// body bytes whatever the transfer encoding (a chunked body is counted after
// de-chunking; chunk-size lines and trailers count as header bytes). The
// parsing itself is Boost.Beast's HTTP/1.1 parser (libboost-dev); this class
// adds the limits Beast has no option for and maps failures to statuses.
// It never touches a socket, so the fuzzer (fuzz/http_fuzz.cpp) drives the
// same code as the server.
//
//   RequestReader r(limits);
//   buffer += bytes_received;
//   switch (r.parse(buffer)) {   // consumes from the front of buffer
//     case Status::Header:   ... check r.request() (no body yet); r.proceed() ...
//     case Status::Complete: ... Request req = r.take(); (reader is ready for the next) ...
//     case Status::Failed:   ... r.error_status(), r.error_message() ...
//     case Status::NeedMore: ... read more ...
//   }
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "server/http/message.h"

namespace ferrite::server::http {

struct ReaderLimits {
  size_t max_header_bytes = 16u << 10;  // request line + header fields
  size_t max_header_count = 64;
  size_t max_body_bytes = 16u << 20;    // the body as the handler sees it
};

class RequestReader {
 public:
  enum class Status { NeedMore, Header, Complete, Failed };

  explicit RequestReader(const ReaderLimits& limits);
  ~RequestReader();
  RequestReader(const RequestReader&) = delete;
  RequestReader& operator=(const RequestReader&) = delete;

  // Parses what it can from the front of `in`, erasing the bytes it used.
  // Header is returned once per request, when the headers are complete (the
  // body not yet read); call proceed() to go on to the body. Failed is final
  // for the connection.
  Status parse(std::string& in);
  void proceed();

  // The request being read: method, target, headers after Header; the body
  // too after Complete.
  const Request& request() const { return req_; }
  // Takes the complete request and resets for the next one on the connection.
  Request take();

  // Whether any byte of a request has been seen (false between requests).
  bool started() const { return started_; }
  bool keep_alive() const { return keep_alive_; }
  // The client sent "Expect: 100-continue" and waits for it before the body.
  bool expects_continue() const;
  // Whether a body follows the headers.
  bool has_body() const;

  int error_status() const { return error_status_; }
  const std::string& error_message() const { return error_message_; }

 private:
  struct Impl;
  Status fail(int status, std::string message);
  Status header_done();
  void reset();

  ReaderLimits limits_;
  std::unique_ptr<Impl> impl_;
  Request req_;
  bool started_ = false;
  bool header_reported_ = false;
  bool proceeding_ = false;
  bool keep_alive_ = true;
  int error_status_ = 0;
  std::string error_message_;
};

}  // namespace ferrite::server::http
