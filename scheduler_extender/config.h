// phalanx-extender configuration: one YAML file (--config) plus flags of the same names
// (--max-slots-per-pod=4 sets max_slots_per_pod). Every error names the field; Usage() lists
// every key. pool_max_slots_per_pod maps a resource pool (the pods' phalanx.io/resource-pool
// label) to its own max_slots_per_pod, e.g. {a100: 8} (flag: --pool-max-slots-per-pod='{a100: 8}');
// cpus_per_slot is required when slot_type is cpu.
#ifndef PHALANX_SCHEDULER_EXTENDER_CONFIG_H_
#define PHALANX_SCHEDULER_EXTENDER_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "gang/slots.h"
#include "http/server.h"
#include "preemption/rules.h"

namespace phalanx::extender {

struct ExtenderConfig {
  std::string listen_host = "127.0.0.1";
  int listen_port = 8888;
  // status_listen: GET /metrics /healthz /readyz /debug/queue also here (plain HTTP); port -1: not.
  std::string status_host;
  int status_port = -1;
  std::string tls_cert_file;
  std::string tls_key_file;
  int64_t max_body_bytes = 64 << 20;
  // http::Limits of both listeners.
  int64_t max_inflight_body_bytes = http::Limits{}.max_inflight_body_bytes;
  int64_t max_connections = http::Limits{}.max_connections;
  int64_t max_connections_per_peer = http::Limits{}.max_connections_per_peer;
  int64_t idle_timeout_seconds = http::Limits{}.idle_timeout_seconds;
  // The key placements and marks are signed with (kube/placement_key.h); empty: a random one.
  std::string placement_key_file;
  std::string kubeconfig;  // Empty: $KUBECONFIG, else in-cluster.
  bool bind = false;       // Serve the bind verb (POST the Binding ourselves).
  bool preemption = true;
  bool backfill = true;
  // preemption/rules.h.
  bool provisional_backfill = preemption::PreemptionRules{}.provisional_backfill;
  int64_t restart_overhead_ms = preemption::PreemptionRules{}.restart_overhead_ms;
  int64_t min_run_before_preemption_ms = preemption::PreemptionRules{}.min_run_ms;
  int64_t max_preemptions = preemption::PreemptionRules{}.max_preemptions;
  int64_t preemption_limit = preemption::PreemptionRules{}.preemption_limit;
  int64_t preemption_window_ms = preemption::PreemptionRules{}.window_ms;
  int64_t preemption_patience_ms = preemption::PreemptionRules{}.patience_ms;
  int64_t preemption_patience_loss_ms = preemption::PreemptionRules{}.patience_loss_ms;
  int64_t reservation_ttl_ms = 30'000;  // Filter-time reservations of foreign gangs.
  int64_t resync_ms = 1'000;            // Admission rounds run at least this often.
  // See refusals.h: how long kube-scheduler may refuse a placed member where it fits by phalanx's
  // rules before its gang is planned again off that node (0: never), and how long its work keeps
  // off such a node after the last refusal.
  int64_t refused_placement_timeout_ms = 120'000;
  int64_t avoid_node_memory_ms = 3'600'000;
  // Filter passes at most this many best-fitting nodes for a pod without a placement; 0 passes
  // every node that fits (see verbs.h).
  int64_t best_fit_candidates = 8;
  // forecaster.h: how often the start of every waiting gang is estimated (0: never), and how many
  // of the first waiting gangs get what-if answers.
  int64_t forecast_interval_ms = 15'000;
  int64_t what_if_gangs = 16;
  // leadership.h: the NAMESPACE/NAME of the Lease this replica's kube-scheduler elects its leader
  // with; rounds run only while it holds it ("": always, for a single replica). Its holder is
  // named lease_holder_prefix... ("": this host's name and "_"), read every lease_poll_ms.
  std::string follow_lease;
  std::string lease_holder_prefix;
  int64_t lease_poll_ms = 500;
  gang::SlotPolicy slots{.milli_cpu_per_slot = 0};  // 0 until cpus_per_slot is set.
};

// Applies `yaml` (a mapping of the keys below) to `config`. `source` names the file in errors.
absl::Status ApplyYaml(absl::string_view yaml, absl::string_view source, ExtenderConfig& config);
// Applies one setting by its YAML key.
absl::Status ApplySetting(absl::string_view key, absl::string_view value, ExtenderConfig& config);
// Reads --config FILE first, then every other --key=value / --key value flag.
absl::StatusOr<ExtenderConfig> LoadConfig(const std::vector<std::string>& args);
// Whether `args` ask for the usage (--help or -h).
bool WantsHelp(const std::vector<std::string>& args);
// How to run phalanx-extender: its flags and every config key with what it sets.
std::string Usage();

}  // namespace phalanx::extender

#endif  // PHALANX_SCHEDULER_EXTENDER_CONFIG_H_
