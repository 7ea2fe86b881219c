// phalanx-extender's HTTP server (http/server.h: keep-alive, optional TLS):
// POST /filter /prioritize /preempt /bind; GET /metrics /healthz /readyz /debug/queue, the GETs
// also on an optional second listener (ServerOptions::status_port).
// Malformed JSON is 400 with a message, bodies over the limit 413, unknown paths 404.
#ifndef PHALANX_SCHEDULER_EXTENDER_SERVER_H_
#define PHALANX_SCHEDULER_EXTENDER_SERVER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/snapshot.h"
#include "http/server.h"
#include "scheduler_extender/metrics.h"
#include "scheduler_extender/verbs.h"
#include "scheduler_extender/wire.h"

namespace phalanx::extender {

// The Content-Type of every JSON reply (never compressed: Go's client, kube-scheduler's, accepts
// gzip, but compressing a 150 KB reply would cost the extender over a millisecond, far more than
// the bytes cost in-cluster).
inline constexpr char kJsonContentType[] = "application/json; charset=utf-8";

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8888;  // 0 picks a free port.
  size_t max_body_bytes = 64 << 20;
  http::Limits limits;        // Of both listeners (the status one's bodies: 4 KB at most).
  std::string tls_cert_file;  // Both set: HTTPS.
  std::string tls_key_file;
  // A second, plain-HTTP listener with only the GET endpoints, for Prometheus and kubelet probes
  // when the verbs listen on localhost. A negative port: none.
  std::string status_host = "0.0.0.0";
  int status_port = -1;
};

// What the server reads from the rest of the extender.
struct ServerDeps {
  Verbs* verbs = nullptr;
  Metrics* metrics = nullptr;
  std::function<std::shared_ptr<const core::ClusterSnapshot>()> snapshot;
  // Blocks until the cache changes or `ms` pass (unset: returns at once). Preempt waits so for
  // victims kube-scheduler names that the cache has not seen yet.
  std::function<void(int64_t ms)> await_cache;
  std::function<bool()> ready;  // The cache has listed nodes and pods.
  // Sets the metrics read from elsewhere (the informer's counters) before /metrics is served.
  std::function<void()> refresh_metrics;
  std::function<std::string()> debug_queue;  // JSON
  std::function<absl::Status(const BindArgs&)> bind;
  std::function<int64_t()> now_ms;
  // Pods in requests are decoded with it (wire.h). Null: placements are taken as written (tests).
  const kube::PlacementKey* placement_key = nullptr;
};

// What /filter and /prioritize do with a request body: parse it (with `key`, as
// ParseExtenderArgs), decide, encode the reply. An error is a malformed body (HTTP 400).
absl::StatusOr<std::string> ServeFilter(Verbs& verbs, const core::ClusterSnapshot& snap,
                                        absl::string_view body, int64_t now_ms,
                                        const kube::PlacementKey* key);
absl::StatusOr<std::string> ServePrioritize(Verbs& verbs, const core::ClusterSnapshot& snap,
                                            absl::string_view body, int64_t now_ms,
                                            const kube::PlacementKey* key);

class ExtenderServer {
 public:
  ExtenderServer(ServerOptions options, ServerDeps deps);
  ~ExtenderServer();

  // Binds and starts serving in the background.
  absl::Status Start();
  void Stop();
  int port() const { return port_; }
  int status_port() const { return status_port_; }

 private:
  void VerbRoutes(http::Server& s);
  // GET /metrics /healthz /readyz /debug/queue.
  void StatusRoutes(http::Server& s);

  ServerOptions options_;
  ServerDeps deps_;
  std::unique_ptr<http::Server> http_;
  std::unique_ptr<http::Server> status_;
  int port_ = 0;
  int status_port_ = 0;
};

}  // namespace phalanx::extender

#endif  // PHALANX_SCHEDULER_EXTENDER_SERVER_H_
