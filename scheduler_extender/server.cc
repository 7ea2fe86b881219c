// HTTP routing for the extender verbs, metrics and health.
#include "scheduler_extender/server.h"

#include <malloc.h>

#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace phalanx::extender {
namespace {

constexpr absl::string_view kNotSynced = "informer cache not synced";

// Whether `snap` has every pod of `victims`.
bool KnowsVictims(const core::ClusterSnapshot& snap, const VictimMap& victims) {
  for (const auto& [node, v] : victims) {
    for (const std::string& uid : v.uids) {
      if (snap.FindPod(uid) == nullptr) return false;
    }
  }
  return true;
}

// Logs the nodes of kube-scheduler's proposal for `args.pod` that preempt dropped because a victim
// there is unknown to the cache even after waiting for it (other drops are the rules at work).
void LogUnknownVictims(const PreemptArgs& args, const VictimMap& kept,
                       const core::ClusterSnapshot& snap) {
  std::string nodes;
  for (const auto& [node, victims] : args.victims) {
    if (kept.contains(node) || KnowsVictims(snap, VictimMap{{node, victims}})) continue;
    absl::StrAppend(&nodes, nodes.empty() ? "" : ", ", node);
  }
  if (nodes.empty()) return;
  std::fprintf(stderr,
               "phalanx-extender: preempt for pod %s/%s drops nodes whose victims the cache has "
               "not seen: %s\n",
               args.pod.ns.c_str(), args.pod.name.c_str(), nodes.c_str());
}

// Runs `handler`, then records the request in the metrics.
template <typename Handler>
auto Timed(Metrics* metrics, std::string verb, Handler handler) {
  return [metrics, verb = std::move(verb), handler](const http::Request& req, http::Response& res) {
    auto start = std::chrono::steady_clock::now();
    handler(req, res);
    std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    metrics->ObserveRequest(verb, res.status, took.count());
  };
}

// The verb label of a request the HTTP server refused: its extender verb, else "other".
std::string VerbLabel(absl::string_view path) {
  if (!absl::ConsumePrefix(&path, "/")) return "other";
  for (absl::string_view verb : {"filter", "prioritize", "preempt", "bind"}) {
    if (path == verb) return std::string(verb);
  }
  return "other";
}

// A JSON reply; `body` is moved, not copied (prioritize replies run to hundreds of KB).
void SetJson(http::Response& res, std::string body) {
  res.body = std::move(body);
  res.content_type = kJsonContentType;
}

// Request bodies and replies of 5000 nodes run to 60-150 KB. glibc maps buffers that large afresh
// and returns freed heap tops to the kernel, so every request paid dozens of page faults (about a
// tenth of a prioritize); keeping such memory in the process instead costs at most a few MB.
void KeepLargeBuffers() {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
}

void BadRequest(http::Response& res, const absl::Status& st) {
  res.status = 400;
  res.body = absl::StrCat(st.message(), "\n");
}

}  // namespace

absl::StatusOr<std::string> ServeFilter(Verbs& verbs, const core::ClusterSnapshot& snap,
                                        absl::string_view body, int64_t now_ms,
                                        const kube::PlacementKey* key) {
  absl::StatusOr<ExtenderArgs> args = ParseExtenderArgs(body, key);
  if (!args.ok()) return args.status();
  return EncodeFilterResult(*args, verbs.Filter(snap, args->pod, args->nodes, now_ms));
}

absl::StatusOr<std::string> ServePrioritize(Verbs& verbs, const core::ClusterSnapshot& snap,
                                            absl::string_view body, int64_t now_ms,
                                            const kube::PlacementKey* key) {
  absl::StatusOr<ExtenderArgs> args = ParseExtenderArgs(body, key);
  if (!args.ok()) return args.status();
  return EncodeHostPriorities(args->nodes, verbs.Prioritize(snap, args->pod, args->nodes, now_ms));
}

ExtenderServer::ExtenderServer(ServerOptions options, ServerDeps deps)
    : options_(std::move(options)), deps_(std::move(deps)) {}

ExtenderServer::~ExtenderServer() { Stop(); }

void ExtenderServer::VerbRoutes(http::Server& s) {
  Verbs* verbs = deps_.verbs;
  // /filter and /prioritize: the body through `serve` (ServeFilter, ServePrioritize).
  auto decide = [this, verbs](auto serve) {
    return [this, verbs, serve](const http::Request& req, http::Response& res) {
      absl::StatusOr<std::string> reply =
          serve(*verbs, *deps_.snapshot(), req.body, deps_.now_ms(), deps_.placement_key);
      if (!reply.ok()) return BadRequest(res, reply.status());
      SetJson(res, *std::move(reply));
    };
  };
  // Until the cache has listed nodes and pods, a node's held capacity is unknown: filter fails
  // the pod (kube-scheduler retries it) rather than pass it on capacity already planned.
  s.Route("POST", "/filter",
          Timed(deps_.metrics, "filter",
                [this, filter = decide(&ServeFilter)](const auto& req, auto& res) {
                  if (deps_.ready && !deps_.ready()) {
                    return SetJson(res, EncodeFilterError(kNotSynced));
                  }
                  filter(req, res);
                }));
  s.Route("POST", "/prioritize", Timed(deps_.metrics, "prioritize", decide(&ServePrioritize)));
  s.Route("POST", "/preempt",
          Timed(deps_.metrics, "preempt", [this, verbs](const auto& req, auto& res) {
            absl::StatusOr<PreemptArgs> args = ParsePreemptArgs(req.body, deps_.placement_key);
            if (!args.ok()) return BadRequest(res, args.status());
            std::shared_ptr<const core::ClusterSnapshot> snap = deps_.snapshot();
            // An unknown victim drops its node: first give the cache up to 2 s to see it.
            for (int i = 0; i < 20 && deps_.await_cache && !KnowsVictims(*snap, args->victims);
                 ++i) {
              deps_.await_cache(100);
              snap = deps_.snapshot();
            }
            const VictimMap kept = verbs->Preempt(*snap, args->pod, args->victims, deps_.now_ms());
            if (kept.size() < args->victims.size()) LogUnknownVictims(*args, kept, *snap);
            SetJson(res, EncodePreemptResult(kept));
          }));
  s.Route("POST", "/bind", Timed(deps_.metrics, "bind", [this](const auto& req, auto& res) {
            absl::StatusOr<BindArgs> args = ParseBindArgs(req.body);
            if (!args.ok()) return BadRequest(res, args.status());
            absl::Status st =
                deps_.bind ? deps_.bind(*args) : absl::UnimplementedError("binding is not enabled");
            SetJson(res, EncodeBindResult(st.ok() ? "" : st.ToString()));
          }));
}

void ExtenderServer::StatusRoutes(http::Server& s) {
  s.Route("GET", "/metrics", [this](const auto&, auto& res) {
    res.content_type = http::kPrometheusText;
    if (deps_.refresh_metrics) deps_.refresh_metrics();
    if (std::shared_ptr<const core::ClusterSnapshot> snap = deps_.snapshot()) {
      deps_.metrics->CountRunningGangs(*snap);
    }
    res.body = deps_.metrics->Serialize();
  });
  s.Route("GET", "/healthz", [](const auto&, auto& res) { res.body = "ok\n"; });
  s.Route("GET", "/readyz", [this](const auto&, auto& res) {
    bool ready = deps_.ready();
    res.status = ready ? 200 : 503;
    res.body = ready ? "ok\n" : absl::StrCat(kNotSynced, "\n");
  });
  s.Route("GET", "/debug/queue",
          [this](const auto&, auto& res) { SetJson(res, deps_.debug_queue()); });
}

absl::Status ExtenderServer::Start() {
  KeepLargeBuffers();
  http_ = std::make_unique<http::Server>(http::ServerOptions{
      .host = options_.host,
      .port = options_.port,
      .max_body_bytes = options_.max_body_bytes,
      .limits = options_.limits,
      .tls_cert_file = options_.tls_cert_file,
      .tls_key_file = options_.tls_key_file,
      .on_refused = [metrics = deps_.metrics](
                        const http::Request& req,
                        int status) { metrics->CountRequest(VerbLabel(req.path), status); },
  });
  VerbRoutes(*http_);
  StatusRoutes(*http_);
  absl::Status started = http_->Start();
  port_ = http_->port();
  if (!started.ok() || options_.status_port < 0) return started;
  // GET endpoints only: no body is worth reading.
  status_ = std::make_unique<http::Server>(http::ServerOptions{.host = options_.status_host,
                                                               .port = options_.status_port,
                                                               .max_body_bytes = 4096,
                                                               .limits = options_.limits});
  StatusRoutes(*status_);
  started = status_->Start();
  status_port_ = status_->port();
  return started;
}

void ExtenderServer::Stop() {
  if (http_) http_->Stop();
  if (status_) status_->Stop();
}

}  // namespace phalanx::extender
