// phalanx's embedded HTTP/1.1 server on libmicrohttpd (see server.h).
#include "http/server.h"

#include <microhttpd.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace phalanx::http {
namespace {

// Each connection's memory for the request head and its reads: a 60 KB body arrives in a few
// reads.
constexpr size_t kConnectionMemory = 128 << 10;
// A chunked body over the limit is read and dropped (to answer 413 once it ends) up to this much
// past the limit; then the connection closes, as the body may never end.
constexpr size_t kDrainAtMost = 1 << 20;
// How long Stop waits at most for the requests in flight.
constexpr absl::Duration kStopWait = absl::Seconds(5);
// A body's buffer is sized up front from its Content-Length up to this much (a claimed length
// alone must not tie up memory).
constexpr size_t kReserveAtMost = 1 << 20;

// Guards the log fields of every server (libmicrohttpd logs from any thread).
std::mutex log_mu;

Response Text(int status, absl::string_view line) {
  return Response{.status = status, .body = absl::StrCat(line, "\n")};
}

Response TooLarge() { return Text(413, "request body too large"); }

// A request refused because the bodies in flight hold the server's budget.
Response Busy() {
  Response res = Text(503, "server busy: too many request bodies in flight; retry");
  res.headers.emplace_back(MHD_HTTP_HEADER_RETRY_AFTER, "1");
  return res;
}

// Queues `res`; its body is handed to libmicrohttpd without a copy.
MHD_Result Send(MHD_Connection* connection, Response res) {
  auto* body = new std::string(std::move(res.body));
  MHD_Response* r = MHD_create_response_from_buffer_with_free_callback_cls(
      body->size(), body->data(), [](void* p) { delete static_cast<std::string*>(p); }, body);
  if (r == nullptr) {
    delete body;
    return MHD_NO;
  }
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, res.content_type.c_str());
  for (const auto& [name, value] : res.headers) {
    MHD_add_response_header(r, name.c_str(), value.c_str());
  }
  MHD_Result queued = MHD_queue_response(connection, static_cast<unsigned>(res.status), r);
  MHD_destroy_response(r);
  return queued;
}

absl::Status ReadFile(const std::string& path, absl::string_view field, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in || text.str().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": cannot read ", path));
  }
  out = text.str();
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::pair<std::string, int>> ParseListenAddress(absl::string_view address) {
  const size_t colon = address.rfind(':');
  int port = 0;
  if (colon == absl::string_view::npos || !absl::SimpleAtoi(address.substr(colon + 1), &port) ||
      port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected HOST:PORT with a port of 0-65535, got \"", address, "\""));
  }
  return std::pair<std::string, int>{std::string(address.substr(0, colon)), port};
}

namespace {

// `host` without the brackets a URL puts around an IPv6 address ("[::1]").
std::string Unbracketed(absl::string_view host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return std::string(host);
}

// Whether the kernel makes IPv6 sockets (not when booted with ipv6.disable=1).
bool HasIpv6() {
  const int fd = socket(AF_INET6, SOCK_STREAM, 0);
  if (fd < 0) return false;
  close(fd);
  return true;
}

// A request in flight.
struct Pending {
  const Handler* handler = nullptr;  // Its route's.
  std::string body;
  size_t received = 0;  // Bytes of the body read; those past the limit are dropped.
  size_t charged = 0;   // Bytes charged to the server's body budget (Server::body_bytes_).
  bool busy = false;    // The budget refused part of the body: it is dropped, the answer 503.
};

}  // namespace

struct Callbacks {
  // Handler exceptions are 500s in Run; this stops any other (a throwing on_refused hook)
  // before it unwinds through libmicrohttpd's C frames.
  static MHD_Result OnRequest(void* cls, MHD_Connection* connection, const char* url,
                              const char* method, const char* version, const char* data,
                              size_t* size, void** state) {
    try {
      return Serve(*static_cast<Server*>(cls), connection, url, method, version, data, size, state);
    } catch (...) {
      return Answer(*static_cast<const Server*>(cls), connection, Text(500, "internal error"));
    }
  }

  // Queues `res`; once Stop has begun, the connection closes after it.
  static MHD_Result Answer(const Server& server, MHD_Connection* connection, Response res) {
    if (server.stopping_) res.headers.emplace_back(MHD_HTTP_HEADER_CONNECTION, "close");
    return Send(connection, std::move(res));
  }

  static MHD_Result Serve(Server& server, MHD_Connection* connection, const char* url,
                          const char* method, const char* /*version*/, const char* data,
                          size_t* size, void** state) {
    const size_t limit = server.options_.max_body_bytes;
    auto* pending = static_cast<Pending*>(*state);
    if (pending == nullptr) {  // The head is in: the request is in flight until OnCompleted.
      pending = new Pending;
      *state = pending;
      {
        absl::MutexLock lock(&server.mu_);
        ++server.in_flight_;
      }
      // Refusals come before the body, which is then not read: the connection closes after.
      const Request head{.method = method, .path = url};
      Response refusal;
      pending->handler = server.Find(head, refusal);
      if (pending->handler == nullptr) {
        return Answer(server, connection, server.Refuse(head, std::move(refusal)));
      }
      const char* length =
          MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
      size_t declared = 0;
      if (length != nullptr && absl::SimpleAtoi(length, &declared) && declared > limit) {
        return Answer(server, connection, server.Refuse(head, TooLarge()));
      }
      if (!Charge(server, *pending, declared)) {
        return Answer(server, connection, server.Refuse(head, Busy()));
      }
      pending->body.reserve(std::min(declared, kReserveAtMost));
      return MHD_YES;
    }
    if (*size != 0) {  // More of the body.
      pending->received += *size;
      if (pending->received <= limit && !pending->busy) {
        if (pending->received > pending->charged &&
            !Charge(server, *pending, pending->received - pending->charged)) {
          pending->busy = true;  // A body longer than declared, or chunked: dropped from here.
          Release(server, *pending);
          std::string().swap(pending->body);
        } else {
          pending->body.append(data, *size);
        }
      } else if (pending->received > limit + kDrainAtMost) {
        return MHD_NO;  // Closes the connection.
      }
      *size = 0;
      return MHD_YES;
    }
    if (pending->received > limit) {
      return Answer(server, connection, server.Refuse({.method = method, .path = url}, TooLarge()));
    }
    if (pending->busy) {
      return Answer(server, connection, server.Refuse({.method = method, .path = url}, Busy()));
    }
    Request request{.method = method, .path = url, .body = std::move(pending->body)};
    return Answer(server, connection, server.Run(*pending->handler, request));
  }

  // Charges `n` more body bytes of `pending` to the server's budget; false, charging nothing,
  // when that would pass it.
  static bool Charge(Server& server, Pending& pending, size_t n) {
    const size_t budget = server.options_.limits.max_inflight_body_bytes;
    size_t held = server.body_bytes_.load();
    do {
      if (n > budget || held > budget - n) return false;
    } while (!server.body_bytes_.compare_exchange_weak(held, held + n));
    pending.charged += n;
    return true;
  }

  static void Release(Server& server, Pending& pending) {
    server.body_bytes_ -= pending.charged;
    pending.charged = 0;
  }

  static void OnCompleted(void* cls, MHD_Connection* /*connection*/, void** state,
                          MHD_RequestTerminationCode /*why*/) {
    if (*state == nullptr) return;
    auto* server = static_cast<Server*>(cls);
    auto* pending = static_cast<Pending*>(*state);
    Release(*server, *pending);
    delete pending;
    *state = nullptr;
    absl::MutexLock lock(&server->mu_);
    --server->in_flight_;
  }

  // Keeps the lines logged while the server starts (why it failed); writes the rest to stderr, a
  // line a second at most (a flood of bad connections must not flood the log).
  static void OnLog(void* cls, const char* format, va_list args) {
    char line[512];
    std::vsnprintf(line, sizeof(line), format, args);
    absl::string_view text = absl::StripSuffix(absl::StripTrailingAsciiWhitespace(line), ".");
    auto* server = static_cast<Server*>(cls);
    std::lock_guard<std::mutex> lock(log_mu);
    if (server->start_log_ != nullptr) {
      server->start_log_->emplace_back(text);
      return;
    }
    std::optional<std::string> out = server->log_throttle_.Admit(
        absl::Now(),
        absl::StrCat("http server on ", server->options_.host, ":", server->port_, ": ", text));
    if (out.has_value()) std::fprintf(stderr, "%s\n", out->c_str());
  }
};

Server::Server(ServerOptions options) : options_(std::move(options)) {}

Server::~Server() { Stop(); }

void Server::Route(const std::string& method, const std::string& path, Handler handler) {
  routes_[{path, method}] = std::move(handler);
}

const Handler* Server::Find(const Request& request, Response& refusal) const {
  const std::string method = request.method == "HEAD" ? "GET" : request.method;
  auto route = routes_.find({request.path, method});
  if (route != routes_.end()) return &route->second;
  std::vector<std::string> allowed;
  for (auto it = routes_.lower_bound({request.path, ""});
       it != routes_.end() && it->first.first == request.path; ++it) {
    allowed.push_back(it->first.second);
    if (it->first.second == "GET") allowed.push_back("HEAD");
  }
  if (allowed.empty()) {
    refusal = Text(404, absl::StrCat("unknown path ", request.path));
  } else {
    std::sort(allowed.begin(), allowed.end());
    refusal = Text(405, absl::StrCat(request.method, " is not allowed on ", request.path));
    refusal.headers.emplace_back(MHD_HTTP_HEADER_ALLOW, absl::StrJoin(allowed, ", "));
  }
  return nullptr;
}

Response Server::Run(const Handler& handler, const Request& request) const {
  Response res;
  try {
    handler(request, res);
  } catch (const std::exception& e) {
    return Refuse(request, Text(500, absl::StrCat("internal error: ", e.what())));
  } catch (...) {
    return Refuse(request, Text(500, "internal error: unknown exception"));
  }
  return res;
}

Response Server::Refuse(const Request& request, Response res) const {
  if (options_.on_refused) options_.on_refused(request, res.status);
  return res;
}

absl::Status Server::Start() {
  const bool tls = !options_.tls_cert_file.empty() || !options_.tls_key_file.empty();
  if (tls) {
    absl::Status read = ReadFile(options_.tls_cert_file, "tls_cert_file", tls_cert_);
    if (read.ok()) read = ReadFile(options_.tls_key_file, "tls_key_file", tls_key_);
    if (!read.ok()) return read;
  }
  const std::string where = absl::StrCat(options_.host, ":", options_.port);
  const std::string host = Unbracketed(options_.host);
  addrinfo hints{};
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  // No host: the unspecified address, IPv6 (dual-stack, below) where the kernel has it.
  hints.ai_family = !host.empty() ? AF_UNSPEC : HasIpv6() ? AF_INET6 : AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* address = nullptr;
  if (getaddrinfo(host.empty() ? nullptr : host.c_str(), std::to_string(options_.port).c_str(),
                  &hints, &address) != 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", where, ": unknown host"));
  }
  // MHD_USE_ITC: Stop's MHD_quiesce_daemon needs it.
  unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
                   MHD_USE_ITC | MHD_USE_ERROR_LOG;
  // IPv4 clients too when the address is "::" (IPV6_V6ONLY is off).
  if (address->ai_family == AF_INET6) flags |= MHD_USE_DUAL_STACK;
  if (tls) flags |= MHD_USE_TLS;
  // The logger first: libmicrohttpd warns of one given later, on its own logger (stderr).
  std::vector<MHD_OptionItem> options = {
      {MHD_OPTION_EXTERNAL_LOGGER, reinterpret_cast<intptr_t>(&Callbacks::OnLog), this},
      {MHD_OPTION_SOCK_ADDR, 0, address->ai_addr},
      {MHD_OPTION_CONNECTION_TIMEOUT, options_.limits.idle_timeout_seconds, nullptr},
      {MHD_OPTION_CONNECTION_LIMIT, options_.limits.max_connections, nullptr},
      {MHD_OPTION_PER_IP_CONNECTION_LIMIT, options_.limits.max_connections_per_peer, nullptr},
      {MHD_OPTION_CONNECTION_MEMORY_LIMIT, static_cast<intptr_t>(kConnectionMemory), nullptr},
      {MHD_OPTION_NOTIFY_COMPLETED, reinterpret_cast<intptr_t>(&Callbacks::OnCompleted), this},
  };
  if (tls) {
    options.push_back({MHD_OPTION_HTTPS_MEM_CERT, 0, tls_cert_.data()});
    options.push_back({MHD_OPTION_HTTPS_MEM_KEY, 0, tls_key_.data()});
  }
  options.push_back({MHD_OPTION_END, 0, nullptr});
  std::vector<std::string> log;
  SetStartLog(&log);
  daemon_ = MHD_start_daemon(flags, static_cast<uint16_t>(options_.port), nullptr, nullptr,
                             &Callbacks::OnRequest, this, MHD_OPTION_ARRAY, options.data(),
                             MHD_OPTION_END);
  freeaddrinfo(address);
  if (daemon_ != nullptr) port_ = MHD_get_daemon_info(daemon_, MHD_DAEMON_INFO_BIND_PORT)->port;
  SetStartLog(nullptr);  // After port_ is set: lines logged from now on name it.
  if (daemon_ == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", where, ": ", absl::StrJoin(log, "; ")));
  }
  return absl::OkStatus();
}

void Server::SetStartLog(std::vector<std::string>* log) {
  std::lock_guard<std::mutex> lock(log_mu);
  start_log_ = log;
}

void Server::Stop() {
  if (daemon_ == nullptr) return;
  // MHD_stop_daemon shuts the connections' sockets before it joins their threads, which would
  // lose the responses of requests in flight: they are let finish first.
  stopping_ = true;
  const MHD_socket listener = MHD_quiesce_daemon(daemon_);
  {
    absl::MutexLock lock(&mu_);
    mu_.AwaitWithTimeout(absl::Condition(
                             +[](int* in_flight) { return *in_flight == 0; }, &in_flight_),
                         kStopWait);
  }
  MHD_stop_daemon(daemon_);
  if (listener != MHD_INVALID_SOCKET) close(listener);
  daemon_ = nullptr;
}

}  // namespace phalanx::http
