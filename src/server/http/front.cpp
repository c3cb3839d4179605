// The front's I/O side: the acceptor and one Connection per socket, all on
// the I/O thread; workers talk to a connection only through post() and the
// bounded output queue (push_output). See front.h.
#include "server/http/front.h"

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include "core/error.h"
#include "server/http/worker_pool.h"

namespace ferrite::server::http {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using boost::system::error_code;

constexpr int kRequestTimeout = 408;
constexpr int kUnavailable = 503;
constexpr int kClientGone = 499;  // nginx's "client closed request", for the log
constexpr int kListenBacklog = 1024;
constexpr size_t kReadChunk = 16u << 10;
constexpr auto kAcceptRetry = std::chrono::milliseconds(100);

Clock::duration seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

std::string hex(size_t n) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%zx", n);
  return buf;
}

// Status line and header fields of `res`; `length` < 0: chunked.
std::string serialize_head(const Response& res, long long length, bool close, int version) {
  std::string h = (version == 10 ? "HTTP/1.0 " : "HTTP/1.1 ") + std::to_string(res.status) + " " +
                  status_text(res.status) + "\r\n";
  for (const auto& [k, v] : res.headers) h += k + ": " + v + "\r\n";
  if (!res.content_type.empty()) h += "Content-Type: " + res.content_type + "\r\n";
  if (res.status == 204 || res.status == 304) {
    // no body, and no length for one (RFC 9110 8.6)
  } else if (length >= 0) {
    h += "Content-Length: " + std::to_string(length) + "\r\n";
  } else if (version != 10) {
    h += "Transfer-Encoding: chunked\r\n";
  }
  if (close) {
    h += "Connection: close\r\n";
  } else if (version == 10) {
    h += "Connection: keep-alive\r\n";
  }
  return h + "\r\n";
}

}  // namespace

class Connection;

struct Front::Impl {
  Impl(const FrontOptions& o, Application& a)
      : opt(o), app(a), acceptor(ioc), accept_retry(ioc), grace(ioc) {}

  void accept();
  void make_room();
  void remove(uint64_t id);
  void begin_stop();
  void count(uint64_t FrontStats::*field) {
    std::lock_guard<std::mutex> lock(stats_mu);
    ++(stats.*field);
  }

  FrontOptions opt;
  Application& app;
  asio::io_context ioc{1};
  tcp::acceptor acceptor;
  asio::steady_timer accept_retry;
  asio::steady_timer grace;
  std::unique_ptr<WorkerPool> workers;
  std::map<uint64_t, std::shared_ptr<Connection>> conns;  // by id: oldest first (I/O thread)
  uint64_t next_id = 1;
  bool bound = false;
  std::atomic<bool> stopping{false};
  bool stop_begun = false;  // I/O thread
  std::atomic<size_t> open{0};
  mutable std::mutex stats_mu;
  FrontStats stats;
};

// One request and its response on a connection. Not in an anonymous
// namespace: Connection holds it, and a unity build includes this file into
// another, where a member of internal linkage draws -Wsubobject-linkage.
struct Exchange {
  Request req;
  Response res;
  Clock::time_point start = Clock::now();
  bool keep_alive = true;
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  enum class Phase { Idle, Header, Body, Handling, Closed };

  Connection(Front::Impl& front, tcp::socket socket, uint64_t id)
      : front_(front), socket_(std::move(socket)), timer_(front.ioc), reader_(front.opt.reader), id_(id) {}

  uint64_t id() const { return id_; }
  Phase phase() const { return phase_; }
  // When the connection began waiting for its current request (accepted,
  // or its last answer was sent).
  Clock::time_point waiting_since() const { return waiting_since_; }

  void start() {
    error_code ec;
    socket_.set_option(tcp::no_delay(true), ec);
    const tcp::endpoint peer = socket_.remote_endpoint(ec);
    if (!ec) {
      remote_addr_ = peer.address().to_string();
      remote_port_ = peer.port();
    }
    arm(front_.opt.idle_timeout_s);
    read();
  }

  // Server shutdown: connections between requests go now; a request being
  // handled is told its client is gone and gets the grace period.
  void on_stop() {
    if (phase_ == Phase::Handling) {
      keep_alive_ = false;
      if (link_) link_->mark_gone();
    } else {
      close();
    }
  }

  void close() {
    if (phase_ == Phase::Closed) return;
    const bool handling = phase_ == Phase::Handling;
    phase_ = Phase::Closed;
    {
      std::lock_guard<std::mutex> lock(out_mu_);
      out_closed_ = true;
    }
    out_cv_.notify_all();
    if (handling && link_) link_->mark_gone();
    error_code ec;
    socket_.close(ec);
    ++timer_gen_;
    timer_.cancel();
    front_.remove(id_);
  }

  // Worker side of a stream: queues bytes, waiting while more than the
  // limit is queued. False once the connection is closed.
  bool push_output(std::string data) {
    {
      std::unique_lock<std::mutex> lock(out_mu_);
      out_cv_.wait(lock, [&] { return out_closed_ || queued_ < front_.opt.max_pending_output; });
      if (out_closed_) return false;
      queued_ += data.size();
    }
    asio::post(front_.ioc, [self = shared_from_this(), d = std::move(data)]() mutable { self->append(std::move(d)); });
    return true;
  }

  bool chunked() const { return version_ != 10; }

 private:
  void arm(double secs) {
    const uint64_t gen = ++timer_gen_;
    timer_.expires_after(seconds(secs));
    timer_.async_wait([self = shared_from_this(), gen](const error_code& ec) {
      if (!ec && gen == self->timer_gen_) self->on_timeout();
    });
  }

  void disarm() {
    ++timer_gen_;
    timer_.cancel();
  }

  void on_timeout() {
    switch (phase_) {
      case Phase::Header:
      case Phase::Body:
        if (close_after_) break;  // already answering; the answer is stuck
        front_.count(&FrontStats::timed_out);
        refuse(front_.app.error(kRequestTimeout, phase_ == Phase::Header
                                                     ? "the request headers did not arrive in time"
                                                     : "the request body did not arrive in time"),
               /*drain=*/false);
        return;
      case Phase::Handling:
        front_.count(&FrontStats::timed_out);  // the client stopped reading its response
        break;
      default:
        break;
    }
    close();
  }

  void read() {
    if (reading_ || phase_ == Phase::Closed) return;
    reading_ = true;
    socket_.async_read_some(asio::buffer(rbuf_), [self = shared_from_this()](const error_code& ec, size_t n) {
      self->on_read(ec, n);
    });
  }

  void on_read(const error_code& ec, size_t n) {
    reading_ = false;
    if (phase_ == Phase::Closed) return;
    if (ec) {
      close();  // hung up: between requests, mid-request, or while its answer is made
      return;
    }
    if (draining_) {
      drained_ += n;
      if (drained_ > front_.opt.linger_bytes) {
        close();
      } else {
        read();
      }
      return;
    }
    inbuf_.append(rbuf_.data(), n);
    if (phase_ == Phase::Handling) {
      // Bytes of a next request (pipelining) wait, bounded; reading on
      // notices a hang-up while the answer is being made.
      if (inbuf_.size() < front_.opt.reader.max_header_bytes) read();
      return;
    }
    process_input();
  }

  void process_input() {
    for (;;) {
      if (phase_ == Phase::Handling || phase_ == Phase::Closed || close_after_) return;
      switch (reader_.parse(inbuf_)) {
        case RequestReader::Status::NeedMore:
          if (phase_ == Phase::Idle && reader_.started()) {
            phase_ = Phase::Header;
            arm(front_.opt.header_timeout_s);
          }
          read();
          return;
        case RequestReader::Status::Header: {
          exchange_ = std::make_shared<Exchange>();
          version_ = reader_.request().version;
          Request head = reader_.request();
          head.remote_addr = remote_addr_;
          head.remote_port = remote_port_;
          if (front_.stopping || !front_.app.admit(head, exchange_->res)) {
            if (front_.stopping) exchange_->res = front_.app.error(kUnavailable, "the server is shutting down");
            Outcome o;
            o.status = exchange_->res.status;
            front_.app.finished(head, exchange_->res, o);
            refuse(std::move(exchange_->res), reader_.has_body());
            return;
          }
          if (reader_.expects_continue() && reader_.has_body()) enqueue("HTTP/1.1 100 Continue\r\n\r\n");
          reader_.proceed();
          phase_ = Phase::Body;
          arm(front_.opt.body_timeout_s);
          continue;
        }
        case RequestReader::Status::Complete:
          exchange_->keep_alive = reader_.keep_alive();
          exchange_->req = reader_.take();
          exchange_->req.remote_addr = remote_addr_;
          exchange_->req.remote_port = remote_port_;
          dispatch();
          return;
        case RequestReader::Status::Failed:
          front_.count(&FrontStats::refused);
          refuse(front_.app.error(reader_.error_status(), reader_.error_message()), /*drain=*/true);
          return;
      }
    }
  }

  // Answers before the request was read to its end, then closes; with
  // `drain`, the rest of what the client sends is read and dropped for a
  // while first, so that it sees the answer rather than a reset.
  void refuse(Response res, bool drain) {
    close_after_ = true;
    draining_ = drain;
    drained_ = 0;
    keep_alive_ = false;
    inbuf_.clear();
    enqueue(serialize_head(res, static_cast<long long>(res.body.size()), true, version_) + res.body);
    response_done_ = true;
    if (!writing_) after_response();
    if (drain) read();
  }

  void dispatch() {
    phase_ = Phase::Handling;
    disarm();
    keep_alive_ = exchange_->keep_alive && !front_.stopping;
    link_ = exchange_->req.client;
    read();  // notices the client hanging up
    Application& app = front_.app;
    if (app.runs_inline(exchange_->req)) {
      app.handle(exchange_->req, exchange_->res);
      Outcome o;
      o.status = exchange_->res.status;
      o.latency_ms = std::chrono::duration<double, std::milli>(Clock::now() - exchange_->start).count();
      app.finished(exchange_->req, exchange_->res, o);
      send_whole(exchange_->res);
      return;
    }
    auto self = shared_from_this();
    std::shared_ptr<Exchange> ex = exchange_;
    if (!front_.workers->submit([self, ex] { self->run_job(ex); })) {
      front_.count(&FrontStats::refused);
      ex->res = app.error(kUnavailable, "the server is busy (every request worker is taken); retry later");
      ex->res.set_header("Retry-After", "1");
      send_whole(ex->res);
    }
  }

  // On a worker: the handler, then its stream.
  void run_job(const std::shared_ptr<Exchange>& ex) {
    Application& app = front_.app;
    Outcome o;
    auto self = shared_from_this();
    if (ex->req.client->gone()) {
      ex->res.status = kClientGone;
    } else {
      app.handle(ex->req, ex->res);
    }
    if (ex->res.stream && ex->req.client->gone()) {
      ex->res = app.error(kUnavailable, "the client went away or the server is stopping");
    } else if (ex->res.stream) {
      o.streamed = true;
      Response head;
      head.status = ex->res.status;
      head.headers = ex->res.headers;
      head.content_type = ex->res.content_type;
      asio::post(front_.ioc, [self, head = std::move(head)] { self->start_stream(head); });
      Sink sink(*this);
      try {
        ex->res.stream(sink);
      } catch (const std::exception&) {
        // The stream ends here; the client sees an unterminated response.
      }
    }
    o.status = ex->res.status;
    o.client_gone = ex->req.client->gone();
    o.latency_ms = std::chrono::duration<double, std::milli>(Clock::now() - ex->start).count();
    app.finished(ex->req, ex->res, o);
    const bool streamed = o.streamed;
    asio::post(front_.ioc, [self, ex, streamed] {
      if (streamed) {
        self->end_stream();
      } else {
        self->send_whole(ex->res);
      }
    });
  }

  class Sink : public StreamSink {
   public:
    explicit Sink(Connection& c) : c_(c) {}
    bool write(std::string_view data) override {
      if (data.empty()) return true;
      if (!c_.chunked()) return c_.push_output(std::string(data));
      std::string chunk = hex(data.size());
      chunk += "\r\n";
      chunk.append(data);
      chunk += "\r\n";
      return c_.push_output(std::move(chunk));
    }

   private:
    Connection& c_;
  };

  void send_whole(const Response& res) {
    if (phase_ == Phase::Closed) return;
    if (res.stream) {  // a stream from an inline route: not supported there
      Response err = front_.app.error(500, "a streamed response from an inline route");
      send_whole(err);
      return;
    }
    enqueue(serialize_head(res, static_cast<long long>(res.body.size()), !keep_alive_, version_) + res.body);
    finish_response();
  }

  void start_stream(const Response& head) {
    if (phase_ == Phase::Closed) return;
    if (version_ == 10) keep_alive_ = false;  // no chunked encoding: the end is the close
    enqueue(serialize_head(head, -1, !keep_alive_, version_));
  }

  void end_stream() {
    if (phase_ == Phase::Closed) return;
    if (chunked()) enqueue("0\r\n\r\n");
    finish_response();
  }

  void finish_response() {
    response_done_ = true;
    close_after_ = close_after_ || !keep_alive_;
    if (!writing_) after_response();
  }

  void after_response() {
    response_done_ = false;
    waiting_since_ = Clock::now();
    link_.reset();
    exchange_.reset();
    if (close_after_) {
      if (draining_) {
        error_code ec;
        socket_.shutdown(tcp::socket::shutdown_send, ec);
        arm(front_.opt.linger_s);
        read();
      } else {
        close();
      }
      return;
    }
    phase_ = Phase::Idle;
    arm(front_.opt.idle_timeout_s);
    if (!inbuf_.empty()) {
      process_input();
    } else {
      read();
    }
  }

  // I/O thread: queue bytes made here.
  void enqueue(std::string data) {
    {
      std::lock_guard<std::mutex> lock(out_mu_);
      queued_ += data.size();
    }
    append(std::move(data));
  }

  // I/O thread: bytes already counted in queued_.
  void append(std::string data) {
    if (phase_ == Phase::Closed) {
      release(data.size());
      return;
    }
    outq_.push_back(std::move(data));
    if (!writing_) write_next();
  }

  void release(size_t n) {
    {
      std::lock_guard<std::mutex> lock(out_mu_);
      queued_ -= std::min(queued_, n);
    }
    out_cv_.notify_all();
  }

  void write_next() {
    writing_ = true;
    if (phase_ == Phase::Handling || close_after_) arm(front_.opt.write_timeout_s);
    asio::async_write(socket_, asio::buffer(outq_.front()), [self = shared_from_this()](const error_code& ec, size_t) {
      self->on_write(ec);
    });
  }

  void on_write(const error_code& ec) {
    writing_ = false;
    if (phase_ == Phase::Closed) return;
    if (ec) {
      close();
      return;
    }
    release(outq_.front().size());
    outq_.pop_front();
    if (!outq_.empty()) {
      write_next();
      return;
    }
    if (phase_ == Phase::Handling) disarm();  // nothing waits for the client now
    if (response_done_) after_response();
  }

  Front::Impl& front_;
  tcp::socket socket_;
  asio::steady_timer timer_;
  uint64_t timer_gen_ = 0;
  RequestReader reader_;
  uint64_t id_;
  Phase phase_ = Phase::Idle;
  std::string remote_addr_;
  int remote_port_ = 0;
  int version_ = 11;
  Clock::time_point waiting_since_ = Clock::now();
  std::array<char, kReadChunk> rbuf_{};
  std::string inbuf_;
  bool reading_ = false;
  bool writing_ = false;
  bool keep_alive_ = true;
  bool close_after_ = false;   // close once the queued output is written
  bool draining_ = false;      // reading and dropping what the client still sends
  size_t drained_ = 0;
  bool response_done_ = false;  // the whole response is queued
  std::shared_ptr<Exchange> exchange_;
  std::shared_ptr<ClientLink> link_;
  std::deque<std::string> outq_;
  std::mutex out_mu_;
  std::condition_variable out_cv_;
  size_t queued_ = 0;
  bool out_closed_ = false;
};

void Front::Impl::accept() {
  acceptor.async_accept([this](const error_code& ec, tcp::socket socket) {
    if (stopping) return;
    if (ec) {
      if (ec == asio::error::operation_aborted) return;
      // Out of descriptors (or a transient failure): try again shortly
      // rather than spinning.
      accept_retry.expires_after(kAcceptRetry);
      accept_retry.async_wait([this](const error_code& e) {
        if (!e) accept();
      });
      return;
    }
    {
      std::lock_guard<std::mutex> lock(stats_mu);
      ++stats.accepted;
    }
    if (conns.size() >= opt.max_connections) make_room();
    if (conns.size() >= opt.max_connections) {
      count(&FrontStats::refused);
      const Response r = app.error(kUnavailable, "too many connections; retry later");
      const std::string bytes = serialize_head(r, static_cast<long long>(r.body.size()), true, 11) + r.body;
      error_code e;
      socket.non_blocking(true, e);
      socket.write_some(asio::buffer(bytes), e);
      socket.close(e);
    } else {
      const uint64_t id = next_id++;
      auto c = std::make_shared<Connection>(*this, std::move(socket), id);
      conns.emplace(id, c);
      ++open;
      c->start();
    }
    accept();
  });
}

// Closes the connection that has waited longest for its request to arrive
// (a slow sender, or an idle keep-alive one); never one being answered.
void Front::Impl::make_room() {
  std::shared_ptr<Connection> oldest;
  for (auto& [id, c] : conns) {
    if (c->phase() == Connection::Phase::Handling) continue;
    if (!oldest || c->waiting_since() < oldest->waiting_since()) oldest = c;
  }
  if (!oldest) return;
  count(&FrontStats::evicted);
  oldest->close();
}

void Front::Impl::remove(uint64_t id) {
  if (conns.erase(id) > 0) --open;
  if (stop_begun && conns.empty()) {
    grace.cancel();
    ioc.stop();
  }
}

void Front::Impl::begin_stop() {
  stop_begun = true;
  error_code ec;
  acceptor.close(ec);
  accept_retry.cancel();
  std::vector<std::shared_ptr<Connection>> all;
  for (auto& [id, c] : conns) all.push_back(c);
  for (auto& c : all) c->on_stop();
  if (conns.empty()) {
    ioc.stop();
    return;
  }
  grace.expires_after(seconds(opt.shutdown_grace_s));
  grace.async_wait([this](const error_code& e) {
    if (e) return;
    std::vector<std::shared_ptr<Connection>> left;
    for (auto& [id, c] : conns) left.push_back(c);
    for (auto& c : left) c->close();
    ioc.stop();
  });
}

Front::Front(const FrontOptions& options, Application& app) : impl_(std::make_unique<Impl>(options, app)) {
  impl_->workers = std::make_unique<WorkerPool>(options.worker_threads, options.worker_queue);
}

Front::~Front() {
  stop();
  impl_->workers->stop();
}

int Front::bind(const std::string& host, int port) {
  Impl& m = *impl_;
  error_code ec;
  asio::ip::address addr = asio::ip::make_address(host == "localhost" ? "127.0.0.1" : host, ec);
  if (ec) {
    tcp::resolver resolver(m.ioc);
    auto results = resolver.resolve(host, std::to_string(port), ec);
    if (ec || results.empty()) throw IoError(host, "cannot resolve the address to listen on");
    addr = results.begin()->endpoint().address();
  }
  const tcp::endpoint ep(addr, static_cast<unsigned short>(port));
  const std::string where = host + ":" + std::to_string(port);
  m.acceptor.open(ep.protocol(), ec);
  if (ec) throw IoError(where, "cannot open a socket: " + ec.message());
  m.acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  m.acceptor.bind(ep, ec);
  if (ec) throw IoError(where, "cannot bind (" + ec.message() + ")");
  m.acceptor.listen(kListenBacklog, ec);
  if (ec) throw IoError(where, "cannot listen: " + ec.message());
  m.bound = true;
  return m.acceptor.local_endpoint().port();
}

bool Front::run() {
  Impl& m = *impl_;
  if (!m.bound) return false;
  if (!m.stopping) {
    m.accept();
    m.ioc.run();
  }
  m.workers->stop();
  return true;
}

void Front::stop() {
  if (impl_->stopping.exchange(true)) return;
  asio::post(impl_->ioc, [m = impl_.get()] { m->begin_stop(); });
}

FrontStats Front::stats() const {
  std::lock_guard<std::mutex> lock(impl_->stats_mu);
  FrontStats s = impl_->stats;
  s.open = impl_->open.load();
  s.busy = impl_->workers->load();
  return s;
}

}  // namespace ferrite::server::http
