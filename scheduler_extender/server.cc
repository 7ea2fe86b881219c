// HTTP routing for the extender verbs, metrics and health.
#include "scheduler_extender/server.h"

#include <malloc.h>

#include <chrono>

#include "absl/strings/str_cat.h"
#include "httplib.h"

namespace phalanx::extender {
namespace {

// Runs `handler`, then records the request in the metrics.
template <typename Handler>
auto Timed(Metrics* metrics, std::string verb, Handler handler) {
  return [metrics, verb = std::move(verb), handler](const httplib::Request& req,
                                                    httplib::Response& res) {
    auto start = std::chrono::steady_clock::now();
    handler(req, res);  // Leaves status -1 on success; httplib then sends 200.
    std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    metrics->ObserveRequest(verb, res.status == -1 ? 200 : res.status, took.count());
  };
}

// A JSON reply; `body` is moved, not copied (prioritize replies run to hundreds of KB).
void SetJson(httplib::Response& res, std::string body) {
  res.body = std::move(body);
  res.set_header("Content-Type", kJsonContentType);
}

// Request bodies and replies of 5000 nodes run to 60-150 KB. glibc maps buffers that large afresh
// and returns freed heap tops to the kernel, so every request paid dozens of page faults (about a
// tenth of a prioritize); keeping such memory in the process instead costs at most a few MB.
void KeepLargeBuffers() {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
}

void BadRequest(httplib::Response& res, const absl::Status& st) {
  res.status = 400;
  res.set_content(std::string(st.message()) + "\n", "text/plain");
}

}  // namespace

absl::StatusOr<std::string> ServeFilter(Verbs& verbs, const core::ClusterSnapshot& snap,
                                        absl::string_view body, int64_t now_ms) {
  absl::StatusOr<ExtenderArgs> args = ParseExtenderArgs(body);
  if (!args.ok()) return args.status();
  return EncodeFilterResult(*args, verbs.Filter(snap, args->pod, args->nodes, now_ms));
}

absl::StatusOr<std::string> ServePrioritize(Verbs& verbs, const core::ClusterSnapshot& snap,
                                            absl::string_view body, int64_t now_ms) {
  absl::StatusOr<ExtenderArgs> args = ParseExtenderArgs(body);
  if (!args.ok()) return args.status();
  return EncodeHostPriorities(args->nodes, verbs.Prioritize(snap, args->pod, args->nodes, now_ms));
}

ExtenderServer::ExtenderServer(ServerOptions options, ServerDeps deps)
    : options_(std::move(options)), deps_(std::move(deps)) {}

ExtenderServer::~ExtenderServer() { Stop(); }

void ExtenderServer::Routes() {
  httplib::Server& s = *http_;
  Verbs* verbs = deps_.verbs;
  s.Post("/filter", Timed(deps_.metrics, "filter", [this, verbs](const auto& req, auto& res) {
           absl::StatusOr<std::string> reply =
               ServeFilter(*verbs, *deps_.snapshot(), req.body, deps_.now_ms());
           if (!reply.ok()) return BadRequest(res, reply.status());
           SetJson(res, *std::move(reply));
         }));
  s.Post("/prioritize",
         Timed(deps_.metrics, "prioritize", [this, verbs](const auto& req, auto& res) {
           absl::StatusOr<std::string> reply =
               ServePrioritize(*verbs, *deps_.snapshot(), req.body, deps_.now_ms());
           if (!reply.ok()) return BadRequest(res, reply.status());
           SetJson(res, *std::move(reply));
         }));
  s.Post("/preempt", Timed(deps_.metrics, "preempt", [this, verbs](const auto& req, auto& res) {
           absl::StatusOr<PreemptArgs> args = ParsePreemptArgs(req.body);
           if (!args.ok()) return BadRequest(res, args.status());
           SetJson(res, EncodePreemptResult(
                            verbs->Preempt(*deps_.snapshot(), args->pod, args->victims)));
         }));
  s.Post("/bind", Timed(deps_.metrics, "bind", [this](const auto& req, auto& res) {
           absl::StatusOr<BindArgs> args = ParseBindArgs(req.body);
           if (!args.ok()) return BadRequest(res, args.status());
           absl::Status st =
               deps_.bind ? deps_.bind(*args) : absl::UnimplementedError("binding is not enabled");
           SetJson(res, EncodeBindResult(st.ok() ? "" : st.ToString()));
         }));
  s.Get("/metrics", [this](const auto&, auto& res) {
    res.set_content(deps_.metrics->Serialize(), "text/plain; version=0.0.4");
  });
  s.Get("/healthz", [](const auto&, auto& res) { res.set_content("ok\n", "text/plain"); });
  s.Get("/readyz", [this](const auto&, auto& res) {
    bool ready = deps_.ready();
    res.status = ready ? 200 : 503;
    res.set_content(ready ? "ok\n" : "informer cache not synced\n", "text/plain");
  });
  s.Get("/debug/queue", [this](const auto&, auto& res) { SetJson(res, deps_.debug_queue()); });
  s.set_error_handler([](const auto& req, auto& res) {
    if (!res.body.empty()) return;
    std::string why = res.status == 404   ? absl::StrCat("unknown path ", req.path)
                      : res.status == 413 ? "request body too large"
                                          : absl::StrCat("HTTP ", res.status);
    res.set_content(why + "\n", "text/plain");
  });
}

absl::Status ExtenderServer::Start() {
  KeepLargeBuffers();
  if (!options_.tls_cert_file.empty() && !options_.tls_key_file.empty()) {
    http_ = std::make_unique<httplib::SSLServer>(options_.tls_cert_file.c_str(),
                                                 options_.tls_key_file.c_str());
  } else {
    http_ = std::make_unique<httplib::Server>();
  }
  if (!http_->is_valid()) return absl::InvalidArgumentError("TLS certificate or key is unusable");
  http_->set_payload_max_length(options_.max_body_bytes);
  http_->set_keep_alive_max_count(100000);
  http_->set_tcp_nodelay(true);
  // SO_REUSEADDR and not cpp-httplib's default SO_REUSEPORT: a restart must bind over the
  // TIME_WAIT connections of the previous process, and a second extender must not share the port.
  http_->set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  Routes();
  if (options_.port == 0) {
    port_ = http_->bind_to_any_port(options_.host);
  } else {
    port_ = http_->bind_to_port(options_.host, options_.port) ? options_.port : -1;
  }
  if (port_ < 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", options_.host, ":", options_.port));
  }
  thread_ = std::thread([this] { http_->listen_after_bind(); });
  return absl::OkStatus();
}

void ExtenderServer::Stop() {
  if (http_) http_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace phalanx::extender
