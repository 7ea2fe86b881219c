// Prometheus metrics of phalanx-master: every gRPC call (by method and code, with its duration,
// recorded by a server interceptor), open allocations by state, the job queue by pool and state,
// preemptions by outcome, pod events, pods force-deleted and pods a checkpoint's time could not be
// patched on. MetricsServer serves them as text on /metrics.
#ifndef PHALANX_MASTER_API_METRICS_H_
#define PHALANX_MASTER_API_METRICS_H_

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/support/server_interceptor.h"
#include "http/server.h"
#include "master/config/metrics_server.h"
#include "master/jobs/job_manager.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace phalanx::master {

class MasterMetrics {
 public:
  MasterMetrics();

  // `method` is the full gRPC method name, `code` its status code's name.
  void ObserveRpc(absl::string_view method, absl::string_view code, double seconds);
  // Sets gauges from the manager's state and raises counters to its totals.
  void Update(const ManagerStats& stats, const std::vector<QueueEntry>& queue);
  // The text exposition format (version 0.0.4).
  std::string Serialize() const;
  // For grpc::ServerBuilder::experimental().SetInterceptorCreators.
  std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> InterceptorFactory();

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Histogram>& rpc_seconds_;
  prometheus::Family<prometheus::Counter>& rpcs_;
  prometheus::Family<prometheus::Gauge>& allocations_;
  prometheus::Family<prometheus::Gauge>& queue_jobs_;
  prometheus::Family<prometheus::Counter>& preemptions_;
  prometheus::Counter& pod_events_;
  prometheus::Counter& pods_force_deleted_;
  prometheus::Counter& checkpoint_annotation_failures_;
  absl::Mutex update_mu_;
  // (pool, state) ever set.
  std::set<std::pair<std::string, std::string>> queue_labels_ ABSL_GUARDED_BY(update_mu_);
};

// /metrics (what `render` returns) and /healthz over HTTP.
class MetricsServer {
 public:
  explicit MetricsServer(std::function<std::string()> render);
  ~MetricsServer();  // Stops.
  // Listens on host:port (port 0 picks one) within `limits` (unset ones: http::Limits'
  // defaults); serves until destroyed.
  absl::Status Start(const std::string& host, int port, const MetricsServerConfig& limits = {});
  int port() const { return port_; }

 private:
  std::function<std::string()> render_;
  std::unique_ptr<http::Server> http_;
  int port_ = -1;
};

}  // namespace phalanx::master

#endif  // PHALANX_MASTER_API_METRICS_H_
