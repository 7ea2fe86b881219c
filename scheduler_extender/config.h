// phalanx-extender configuration: one YAML file (--config) plus flags of the same names
// (--max-slots-per-pod=4 sets max_slots_per_pod). Every error names the field.
#ifndef PHALANX_SCHEDULER_EXTENDER_CONFIG_H_
#define PHALANX_SCHEDULER_EXTENDER_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "gang/slots.h"

namespace phalanx::extender {

struct ExtenderConfig {
  std::string listen_host = "127.0.0.1";
  int listen_port = 8888;
  std::string tls_cert_file;
  std::string tls_key_file;
  int64_t max_body_bytes = 64 << 20;
  std::string kubeconfig;  // Empty: $KUBECONFIG, else in-cluster.
  bool bind = false;       // Serve the bind verb (POST the Binding ourselves).
  bool preemption = true;
  bool backfill = true;
  int64_t reservation_ttl_ms = 30'000;  // Filter-time reservations of foreign gangs.
  int64_t resync_ms = 1'000;            // Admission rounds run at least this often.
  // Filter passes at most this many best-fitting nodes for a pod without a placement; 0 passes
  // every node that fits (see verbs.h).
  int64_t best_fit_candidates = 8;
  gang::SlotPolicy slots;
};

// Applies `yaml` (a mapping of the keys below) to `config`. `source` names the file in errors.
absl::Status ApplyYaml(absl::string_view yaml, absl::string_view source, ExtenderConfig& config);
// Applies one setting by its YAML key.
absl::Status ApplySetting(absl::string_view key, absl::string_view value, ExtenderConfig& config);
// Reads --config FILE first, then every other --key=value / --key value flag.
absl::StatusOr<ExtenderConfig> LoadConfig(const std::vector<std::string>& args);

}  // namespace phalanx::extender

#endif  // PHALANX_SCHEDULER_EXTENDER_CONFIG_H_
