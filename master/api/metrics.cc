// Metric families of phalanx-master, the gRPC interceptor that feeds them, and their HTTP server.
#include "master/api/metrics.h"

#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "prometheus/text_serializer.h"
#include "proto/grpc_codes.h"

namespace phalanx::master {
namespace {

using grpc::experimental::InterceptionHookPoints;

prometheus::Histogram::BucketBoundaries RpcBuckets() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 60};
}

// Raises `counter` to `total` (totals only grow).
void RaiseTo(prometheus::Counter& counter, double total) {
  if (total > counter.Value()) counter.Increment(total - counter.Value());
}

const char* QueueStateName(QueueState s) {
  switch (s) {
    case QueueState::kQueued:
      return "queued";
    case QueueState::kScheduled:
      return "scheduled";
    case QueueState::kBackfilled:
      return "scheduled_backfilled";
  }
  return "unknown";
}

class RpcInterceptor : public grpc::experimental::Interceptor {
 public:
  RpcInterceptor(MasterMetrics* metrics, const char* method)
      : metrics_(metrics), method_(method), start_(absl::Now()) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      metrics_->ObserveRpc(method_, GrpcCodeName(methods->GetSendStatus().error_code()),
                           absl::ToDoubleSeconds(absl::Now() - start_));
    }
    methods->Proceed();
  }

 private:
  MasterMetrics* metrics_;
  const char* method_;
  absl::Time start_;
};

class RpcInterceptorFactory : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit RpcInterceptorFactory(MasterMetrics* metrics) : metrics_(metrics) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new RpcInterceptor(metrics_, info->method());
  }

 private:
  MasterMetrics* metrics_;
};

}  // namespace

MasterMetrics::MasterMetrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      rpc_seconds_(prometheus::BuildHistogram()
                       .Name("phalanx_master_grpc_request_duration_seconds")
                       .Help("Time to serve a gRPC call, by method.")
                       .Register(*registry_)),
      rpcs_(prometheus::BuildCounter()
                .Name("phalanx_master_grpc_requests_total")
                .Help("gRPC calls served, by method and status code.")
                .Register(*registry_)),
      allocations_(prometheus::BuildGauge()
                       .Name("phalanx_master_allocations")
                       .Help("Open allocations (gangs of pods) by state.")
                       .Register(*registry_)),
      queue_jobs_(prometheus::BuildGauge()
                      .Name("phalanx_master_queue_jobs")
                      .Help("Active jobs in the queue, by resource pool and state.")
                      .Register(*registry_)),
      preemptions_(prometheus::BuildCounter()
                       .Name("phalanx_master_preemptions_total")
                       .Help("Allocations signalled to checkpoint and stop, by outcome.")
                       .Register(*registry_)),
      pod_events_(prometheus::BuildCounter()
                      .Name("phalanx_master_pod_events_total")
                      .Help("Pod changes and deletions observed through the watch.")
                      .Register(*registry_)
                      .Add({})),
      pods_force_deleted_(
          prometheus::BuildCounter()
              .Name("phalanx_master_pods_force_deleted_total")
              .Help("Pods force-deleted after terminating past terminating_pod_timeout on a node "
                    "that is down.")
              .Register(*registry_)
              .Add({})),
      checkpoint_annotation_failures_(
          prometheus::BuildCounter()
              .Name("phalanx_master_checkpoint_annotation_failures_total")
              .Help("Pods a reported checkpoint's time could not be patched on "
                    "(phalanx.io/checkpointed-at; the run's next checkpoint patches again).")
              .Register(*registry_)
              .Add({})) {}

void MasterMetrics::ObserveRpc(absl::string_view method, absl::string_view code, double seconds) {
  std::string m(method);
  rpc_seconds_.Add({{"method", m}}, RpcBuckets()).Observe(seconds);
  rpcs_.Add({{"method", m}, {"code", std::string(code)}}).Increment();
}

void MasterMetrics::Update(const ManagerStats& stats, const std::vector<QueueEntry>& queue) {
  absl::MutexLock lock(&update_mu_);
  for (AllocState s : {AllocState::kPending, AllocState::kScheduled, AllocState::kRunning,
                       AllocState::kPreempting, AllocState::kTerminating}) {
    const std::string name(AllocStateName(s));
    auto it = stats.open_allocations.find(name);
    allocations_.Add({{"state", absl::AsciiStrToLower(name)}})
        .Set(it == stats.open_allocations.end() ? 0 : it->second);
  }
  // Pools and states seen before and empty now read 0.
  std::map<std::pair<std::string, std::string>, int> jobs;
  for (const auto& key : queue_labels_) jobs[key] = 0;
  for (const QueueEntry& e : queue) ++jobs[{e.job.resource_pool, QueueStateName(e.state)}];
  for (const auto& [key, count] : jobs) {
    queue_labels_.insert(key);
    queue_jobs_.Add({{"pool", key.first}, {"state", key.second}}).Set(count);
  }
  RaiseTo(preemptions_.Add({{"outcome", "requested"}}), stats.preemptions_requested);
  RaiseTo(preemptions_.Add({{"outcome", "acknowledged"}}), stats.preemptions_acknowledged);
  RaiseTo(preemptions_.Add({{"outcome", "timed_out"}}), stats.preemptions_timed_out);
  RaiseTo(pod_events_, stats.pod_events);
  RaiseTo(pods_force_deleted_, stats.pods_force_deleted);
  RaiseTo(checkpoint_annotation_failures_, stats.checkpoint_annotation_failures);
}

std::string MasterMetrics::Serialize() const {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry_->Collect());
  return out.str();
}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
MasterMetrics::InterceptorFactory() {
  return std::make_unique<RpcInterceptorFactory>(this);
}

MetricsServer::MetricsServer(std::function<std::string()> render) : render_(std::move(render)) {}

MetricsServer::~MetricsServer() = default;

absl::Status MetricsServer::Start(const std::string& host, int port,
                                  const MetricsServerConfig& limits) {
  http::Limits bounds;
  bounds.max_connections =
      static_cast<unsigned>(limits.max_connections.value_or(bounds.max_connections));
  bounds.max_connections_per_peer = static_cast<unsigned>(
      limits.max_connections_per_peer.value_or(bounds.max_connections_per_peer));
  bounds.idle_timeout_seconds =
      static_cast<unsigned>(limits.idle_timeout_seconds.value_or(bounds.idle_timeout_seconds));
  // GET endpoints only: no body is worth reading.
  http_ = std::make_unique<http::Server>(
      http::ServerOptions{.host = host, .port = port, .max_body_bytes = 4096, .limits = bounds});
  http_->Route("GET", "/metrics", [this](const http::Request&, http::Response& res) {
    res.content_type = http::kPrometheusText;
    res.body = render_();
  });
  http_->Route("GET", "/healthz",
               [](const http::Request&, http::Response& res) { res.body = "ok\n"; });
  absl::Status started = http_->Start();
  port_ = started.ok() ? http_->port() : -1;
  return started;
}

}  // namespace phalanx::master
