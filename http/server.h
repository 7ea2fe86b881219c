// phalanx's embedded HTTP/1.1 server, on libmicrohttpd: keep-alive connections, each served by its
// own thread (a slow handler on one connection never holds up another), optional TLS, routes by
// method and exact path; HEAD is served by the path's GET handler, without the body. An unknown
// path is 404 and a known path with another method 405 (with an Allow header), both answered
// before the body is read; a body over the limit is 413. Each has a one-line text body. Handlers
// run on the connections' threads, so they may run at once.
// Bounds, so that one client cannot stop the server answering others (probes, kube-scheduler):
// connections per peer address and in total (past either, a new connection is closed at once and
// the refusal logged), idle time, and the bodies of all requests in flight together (a request
// whose body would pass that is answered 503 with Retry-After before its body is read or its
// handler runs; nothing already accepted is dropped).
#ifndef PHALANX_HTTP_SERVER_H_
#define PHALANX_HTTP_SERVER_H_

#include <atomic>
#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "http/log_throttle.h"

struct MHD_Daemon;

namespace phalanx::http {

struct Request {
  std::string method;
  std::string path;
  std::string body;
};

struct Response {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::vector<std::pair<std::string, std::string>> headers;  // Others, as (name, value).
  std::string body;
};

using Handler = std::function<void(const Request&, Response&)>;

// The Content-Type of Prometheus' text exposition format.
inline constexpr char kPrometheusText[] = "text/plain; version=0.0.4; charset=utf-8";

// A listen address "HOST:PORT" as ServerOptions takes it: the host (perhaps empty or bracketed)
// and a port of 0-65535, or an error saying so.
absl::StatusOr<std::pair<std::string, int>> ParseListenAddress(absl::string_view address);

// What one server holds at most (see the top of this file); settings of both services.
struct Limits {
  // The bodies of every request in flight together: a declared Content-Length counts from the
  // head on, a chunked body as it arrives.
  size_t max_inflight_body_bytes = 256 << 20;
  unsigned max_connections = 1000;         // In total (each holds a thread while open).
  unsigned max_connections_per_peer = 64;  // From one client address.
  // A connection with nothing to read or write for this long is closed. Longer than the 90 s
  // after which Go's client (kube-scheduler's, Prometheus') drops an idle connection, so the
  // client closes first and never sends a request on a connection the server has just closed.
  unsigned idle_timeout_seconds = 120;
};

struct ServerOptions {
  // An address or a name to listen on. "::" takes IPv4 clients too; "[::1]" means "::1". Empty
  // (Go's ":8888") is every interface: "::", or "0.0.0.0" where the kernel has no IPv6.
  std::string host = "127.0.0.1";
  int port = 0;  // 0 picks a free port.
  size_t max_body_bytes = 64 << 20;
  Limits limits;
  std::string tls_cert_file;  // Both set: HTTPS (PEM files).
  std::string tls_key_file;
  // Called with the method and path (no body) of each request the server answers itself: 404,
  // 405, 413, and 500 when a handler throws. Optional; runs on the connection's thread.
  std::function<void(const Request& request, int status)> on_refused;
};

class Server {
 public:
  explicit Server(ServerOptions options);
  ~Server();  // Stops.
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Registers `handler` for `method` ("GET", "POST") on `path`. Only before Start.
  void Route(const std::string& method, const std::string& path, Handler handler);
  // Listens and serves in the background. InvalidArgument when a TLS file cannot be read;
  // Unavailable, with libmicrohttpd's reason, when the server cannot start (the address is taken,
  // the certificate or key is unusable).
  absl::Status Start();
  // Stops taking connections, waits up to 5 s for the requests in flight to be answered (with
  // Connection: close), then closes every connection. Idempotent.
  void Stop();
  int port() const { return port_; }

 private:
  friend struct Callbacks;  // libmicrohttpd's callbacks (server.cc).

  // The handler for the request's method (GET's for HEAD) and path; nullptr and the 404 or 405 to
  // give in `refusal` when there is none.
  const Handler* Find(const Request& request, Response& refusal) const;
  // The response `handler` gives to `request`, or 500 when it throws.
  Response Run(const Handler& handler, const Request& request) const;
  // `res`, a response the server gives itself, after telling options_.on_refused.
  Response Refuse(const Request& request, Response res) const;
  void SetStartLog(std::vector<std::string>* log);

  ServerOptions options_;
  std::map<std::pair<std::string, std::string>, Handler> routes_;  // (path, method)
  std::string tls_cert_;
  std::string tls_key_;
  // What libmicrohttpd logs while Start() runs is collected here; later lines go to stderr, a
  // line a second at most, counting those dropped. Guarded by a lock in server.cc.
  std::vector<std::string>* start_log_ = nullptr;
  LogThrottle log_throttle_;
  MHD_Daemon* daemon_ = nullptr;
  int port_ = 0;
  std::atomic<bool> stopping_ = false;  // Stop has begun: responses close their connections.
  absl::Mutex mu_;
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;  // Requests begun and not yet completed.
  std::atomic<size_t> body_bytes_ = 0;      // Charged to requests in flight (their bodies).
};

}  // namespace phalanx::http

#endif  // PHALANX_HTTP_SERVER_H_
