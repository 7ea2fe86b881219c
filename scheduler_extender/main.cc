// phalanx-extender: the kube-scheduler extender service. Loads its config, mirrors nodes and pods
// through an informer, runs the admission loop, and serves the extender verbs until SIGTERM.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "kube/client.h"
#include "kube/config.h"
#include "kube/informer.h"
#include "kube/placement_key.h"
#include "scheduler_extender/admission_loop.h"
#include "scheduler_extender/config.h"
#include "scheduler_extender/forecaster.h"
#include "scheduler_extender/leadership.h"
#include "scheduler_extender/server.h"

namespace phalanx::extender {
namespace {

std::atomic<bool> g_stop{false};

int64_t NowMs() { return absl::ToUnixMillis(absl::Now()); }

int Fail(const absl::Status& st) {
  std::fprintf(stderr, "phalanx-extender: %s\n", std::string(st.message()).c_str());
  return 1;
}

int Main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (WantsHelp(args)) {
    std::fputs(Usage().c_str(), stdout);
    return 0;
  }
  const bool check_only = std::erase(args, "--check-config") > 0;
  absl::StatusOr<ExtenderConfig> config = LoadConfig(args);
  if (!config.ok()) return Fail(config.status());
  absl::StatusOr<kube::PlacementKey> key =
      config->placement_key_file.empty()
          ? kube::PlacementKey::Random()
          : kube::PlacementKey::FromFile(config->placement_key_file, "placement_key_file");
  if (!key.ok()) return Fail(key.status());
  if (check_only) {
    std::puts("phalanx-extender: the configuration is valid");
    return 0;
  }
  absl::StatusOr<kube::Config> kc =
      config->kubeconfig.empty() ? kube::DefaultConfig() : kube::LoadKubeconfig(config->kubeconfig);
  if (!kc.ok()) return Fail(kc.status());
  if (config->placement_key_file.empty()) {
    std::fprintf(stderr,
                 "phalanx-extender: warning: no placement_key_file: placements are signed with a "
                 "random key, so those written before a restart are planned again (set "
                 "placement_key_file to a mounted Secret of >= 32 bytes)\n");
  }
  kube::Client client(*kc);
  kube::Informer informer(client, kube::InformerOptions{.placement_key = &*key});
  informer.Start();

  std::unique_ptr<Leadership> leadership;
  if (!config->follow_lease.empty()) {
    const char* pod_name = std::getenv("POD_NAME");
    absl::StatusOr<std::string> prefix = HolderPrefix(
        config->lease_holder_prefix, DefaultHolderPrefix(), pod_name == nullptr ? "" : pod_name);
    if (!prefix.ok()) return Fail(prefix.status());
    const size_t slash = config->follow_lease.find('/');
    leadership = std::make_unique<Leadership>(
        LeadershipOptions{.lease_namespace = config->follow_lease.substr(0, slash),
                          .lease_name = config->follow_lease.substr(slash + 1),
                          .holder_prefix = *std::move(prefix),
                          .poll_ms = config->lease_poll_ms},
        &client, NowMs);
  }
  auto leads = [&] { return leadership == nullptr || leadership->Leads(); };
  Metrics metrics;
  ReservationBook book;
  Verbs verbs(config->slots, config->reservation_ttl_ms, &book,
              static_cast<size_t>(config->best_fit_candidates));
  preemption::AdmissionOptions admission{
      .slots = config->slots,
      .preemption = config->preemption,
      .backfill = config->backfill,
      .rules = {.provisional_backfill = config->provisional_backfill,
                .restart_overhead_ms = config->restart_overhead_ms,
                .min_run_ms = config->min_run_before_preemption_ms,
                .max_preemptions = static_cast<int32_t>(config->max_preemptions),
                .preemption_limit = static_cast<int32_t>(config->preemption_limit),
                .window_ms = config->preemption_window_ms,
                .patience_ms = config->preemption_patience_ms,
                .patience_loss_ms = config->preemption_patience_loss_ms}};
  Forecaster forecaster(
      admission, config->forecast_interval_ms, static_cast<int>(config->what_if_gangs),
      ForecasterDeps{.snapshot = [&] { return leads() ? informer.Snapshot() : nullptr; },
                     .now_ms = NowMs,
                     .metrics = &metrics});
  AdmissionLoop loop(admission, config->resync_ms,
                     LoopDeps{.client = &client,
                              .placement_key = &*key,
                              .metrics = &metrics,
                              .reservations = &book,
                              .snapshot = [&] { return informer.Snapshot(); },
                              .wait_for_change =
                                  [&](uint64_t v, int64_t ms) {
                                    return informer.WaitForChange(v, absl::Milliseconds(ms));
                                  },
                              .now_ms = NowMs,
                              .outlook = [&] { return forecaster.Latest(); },
                              .leads = leads,
                              .cache_version = [&] { return informer.pods_resource_version(); }},
                     Refusals(config->refused_placement_timeout_ms, config->avoid_node_memory_ms));
  ServerDeps deps{
      .verbs = &verbs,
      .metrics = &metrics,
      .snapshot = [&] { return informer.Snapshot(); },
      .await_cache =
          [&](int64_t ms) { informer.WaitForChange(informer.version(), absl::Milliseconds(ms)); },
      .ready = [&] { return informer.HasSynced(); },
      .refresh_metrics =
          [&] {
            kube::InformerCounters c = informer.counters();
            metrics.SetCacheObjects("pods", c.pods);
            metrics.SetCacheObjects("nodes", c.nodes);
            metrics.SetWatchRestarts(c.watch_restarts);
            metrics.SetLeader(leads());
          },
      .debug_queue = [&] { return loop.DebugQueueJson(); },
      .now_ms = NowMs,
      .placement_key = &*key};
  if (config->bind) {
    deps.bind = [&](const BindArgs& b) {
      return client.Bind(b.pod_namespace, b.pod_name, b.node, b.pod_uid);
    };
  }
  ExtenderServer server(
      ServerOptions{
          .host = config->listen_host,
          .port = config->listen_port,
          .max_body_bytes = static_cast<size_t>(config->max_body_bytes),
          .limits = {.max_inflight_body_bytes =
                         static_cast<size_t>(config->max_inflight_body_bytes),
                     .max_connections = static_cast<unsigned>(config->max_connections),
                     .max_connections_per_peer =
                         static_cast<unsigned>(config->max_connections_per_peer),
                     .idle_timeout_seconds = static_cast<unsigned>(config->idle_timeout_seconds)},
          .tls_cert_file = config->tls_cert_file,
          .tls_key_file = config->tls_key_file,
          .status_host = config->status_host,
          .status_port = config->status_port},
      deps);
  if (absl::Status st = server.Start(); !st.ok()) return Fail(st);
  std::printf("phalanx-extender: listening on %s:%d\n", config->listen_host.c_str(), server.port());
  if (config->status_port >= 0) {
    std::printf("phalanx-extender: status endpoints on %s:%d\n", config->status_host.c_str(),
                server.status_port());
  }
  std::fflush(stdout);

  std::signal(SIGTERM, [](int) { g_stop = true; });
  std::signal(SIGINT, [](int) { g_stop = true; });
  // No admission round before nodes and pods are both listed: a round on a cache without nodes
  // would take every planned node as gone and preempt the gangs planned on them.
  for (int waited_s = 1; !informer.WaitForSync(absl::Seconds(1)) && !g_stop.load(); ++waited_s) {
    if (waited_s % 30 == 0) {
      std::fprintf(stderr,
                   "phalanx-extender: still waiting for the first list of nodes and pods\n");
    }
  }
  std::thread following;
  if (leadership != nullptr) {
    leadership->Poll();
    following = std::thread([&] { leadership->Run(g_stop); });
  }
  std::thread rounds([&] { loop.Run(g_stop); });
  std::thread forecasts;
  if (config->forecast_interval_ms > 0) forecasts = std::thread([&] { forecaster.Run(g_stop); });
  while (!g_stop.load()) absl::SleepFor(absl::Milliseconds(200));
  rounds.join();
  if (following.joinable()) following.join();
  if (forecasts.joinable()) forecasts.join();
  server.Stop();
  informer.Stop();
  return 0;
}

}  // namespace
}  // namespace phalanx::extender

int main(int argc, char** argv) { return phalanx::extender::Main(argc, argv); }
